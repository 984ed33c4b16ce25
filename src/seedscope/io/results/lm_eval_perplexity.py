"""lm-evaluation-harness ``--log_samples`` of a perplexity task (``loglikelihood_rolling``: wikitext and the like).

Each sample holds one document's log-likelihood, not a prediction: there is no answer to compare example by
example across seeds, so each run (a samples file, or a folder holding one run) is read as its scores, a
:class:`~seedscope.io.results.run_score_table.RunScores` row, computed as lm-eval computes them from the per-document
``[log-likelihood, words or bytes]`` pairs: word_perplexity = exp(−Σ ll / Σ words), byte_perplexity =
exp(−Σ ll / Σ bytes), bits_per_byte = −Σ ll / (Σ bytes · ln 2). Logs without those pairs (before v0.4.7) give the
mean log-likelihood per document.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import ReadOptions, json_records, run_folders
from seedscope.io.results.lm_eval import (PERPLEXITY_METRICS, _records, _results_file, _task_name, _unit_names, is_perplexity,
                                  looks_like_samples, sample_files)
from seedscope.io.results.run_score_table import RUN, SYSTEM, TASK, RunScores
from seedscope.io.validate import expect, load_json, member

MEAN_LOG_LIKELIHOOD = "mean_log_likelihood"


def is_perplexity_log(path: Path) -> bool:
    """A samples file, or a folder of them, of perplexity tasks only (judged by each file's first sample)."""
    if path.is_file():
        return path.suffix in (".json", ".jsonl") and looks_like_samples(path) and _first_is_perplexity(path)
    files = sample_files(path) if path.is_dir() else []
    return bool(files) and all(_first_is_perplexity(file) for file in files)


def _first_is_perplexity(file: Path) -> bool:
    with file.open(encoding="utf-8", errors="replace") as handle:
        line = handle.readline()
    if line.lstrip().startswith("["):  # the pre-0.4.3 pretty-printed array: read whole
        first = json_records(file)[0][0][1]
    else:
        try:
            first = json.loads(line)
        except json.JSONDecodeError:
            return False
    return isinstance(first, dict) and is_perplexity(first)


def read_perplexities(paths: list[Path], *, names: tuple[str, ...] | None = None, task: str | None = None) -> RunScores:
    """One row of scores per run and task: a file is one run, a folder one run holding a file per task."""
    tasks: dict[Path, str] = {}

    def task_of(file: Path) -> str:
        return tasks.setdefault(file, _task_name(file))

    units = run_folders(paths, sample_files, task_of, "lm-evaluation-harness samples")
    run_names = _unit_names(units, tasks, ReadOptions(run_names=names))
    rows = [{TASK: tasks[file], SYSTEM: _model(file), RUN: name, **_scores(file)}
            for (_, files), name in zip(units, run_names) for file in files if task in (None, tasks[file])]
    if not rows:
        raise SeedscopeError(f"no lm-eval samples of task {task!r} (tasks found: {', '.join(sorted(set(tasks.values())))})")
    table = pd.DataFrame(rows)
    metrics = [c for c in table.columns if c not in (TASK, SYSTEM, RUN) and table[c].notna().all()]
    found = ", ".join(sorted(set(table[TASK])))
    warnings.warn(f"lm-eval task(s) {found}: a perplexity task (loglikelihood_rolling) logs one log-likelihood per "
                  "document, not predictions; each run is read as its scores (" + ", ".join(metrics) + ")",
                  ReadingChoiceWarning, stacklevel=2)
    return RunScores(table[[TASK, SYSTEM, RUN, *metrics]], metrics, paired=True)


def _model(samples: Path) -> str:
    """The model's name in the results file beside the samples (its last path part), else ``lm-eval``."""
    results = _results_file(samples)
    if results is None:
        return "lm-eval"
    document = expect(load_json(results), "an object", f"{results} (an lm-eval results file)")
    name = member(document, "model_name", "a string", str(results), default=None)
    return Path(name).name if name else "lm-eval"


def _scores(file: Path) -> dict[str, float]:
    """lm-eval's perplexities of one file, from every document's log-likelihood and its word and byte counts."""
    records, unit = _records(file)
    total, counts = 0.0, {metric: 0 for metric in PERPLEXITY_METRICS}
    for number, record in records:
        where = f"{file} {unit} {number}"
        if not is_perplexity(record):
            raise SeedscopeError(f"{where}: not a perplexity sample (one log-likelihood per document) like the "
                                 "file's first; a samples file holds one task")
        total += _log_likelihood(record, where)
        for metric in list(counts):
            pair = record.get(metric)
            if pair is None:
                counts.pop(metric)
                continue
            if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], int) and pair[1] > 0):
                raise SeedscopeError(f"{where}: {metric} is {pair!r}, not a [log-likelihood, positive count] pair")
            counts[metric] += pair[1]
    scores = {MEAN_LOG_LIKELIHOOD: total / len(records)} if not counts else {}
    if "word_perplexity" in counts:
        scores["word_perplexity"] = math.exp(-total / counts["word_perplexity"])
    if "byte_perplexity" in counts:
        scores["byte_perplexity"] = math.exp(-total / counts["byte_perplexity"])
    if "bits_per_byte" in counts:
        scores["bits_per_byte"] = -total / counts["bits_per_byte"] / math.log(2)
    return scores


def _log_likelihood(record: dict, where: str) -> float:
    responses = record.get("filtered_resps", record.get("resps"))
    while isinstance(responses, list):
        responses = responses[0]
    value = float(responses)
    if not math.isfinite(value) or value > 0:
        raise SeedscopeError(f"{where}: log-likelihood {responses!r} is not a log-probability (finite, at most 0)")
    return value
