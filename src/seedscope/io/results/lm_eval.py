"""lm-evaluation-harness ``--log_samples`` files, all three format generations.

- v0.4.0–0.4.2: ``<model_args>_<task>.jsonl`` that is one pretty-printed JSON array, real
  floats and bools, ``arguments`` a list of lists, no hash / filter / metrics keys;
- v0.4.3–0.4.6: ``samples_<task>_<datetime>.jsonl``, true JSON lines with hashes, every leaf
  of ``resps`` / ``filtered_resps`` a string, no ``filter`` / ``metrics`` keys;
- v0.4.7+: the same plus ``filter``, ``metrics`` and one key per metric (``f1`` / ``mcc`` as
  ``[gold, predicted]`` pairs).

Rows are keyed on (task, filter, doc_id); one filter per task is kept. Multiple choice:
prediction = argmax of the choices' log-likelihoods (what ``acc`` uses), probabilities = their
softmax, label = gold choice index. Generation: prediction = the filtered response text,
label = the target text. One run per file, or per folder ("seed directory").
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source, json_records, run_folders, run_names
from seedscope.io.validate import expect, load_json, member
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, PROB_PREFIX, RUN

#: ``samples_<task>_<datetime>``: the timestamp is what follows the last underscore
SAMPLES_STEM = re.compile(r"^samples_(?P<task>.+)_(?P<stamp>[^_]+)$")
SEED_KEYS = ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")
DEFAULT_FILTER = "none"
#: how far into an old-style JSON array file to look for a ``doc_id`` key when sniffing
SNIFF_CHARS = 1 << 20
#: the per-document [log-likelihood, words or bytes] pairs of a perplexity task, as lm-eval names its metrics
PERPLEXITY_METRICS = ("word_perplexity", "byte_perplexity", "bits_per_byte")
_GREEDY = (True, False, "True", "False", "true", "false")


def looks_like_samples(path: Path) -> bool:
    """True for a ``--log_samples`` file: by name, or by a first record that has doc_id and resps."""
    if SAMPLES_STEM.match(path.stem) and path.suffix == ".jsonl":
        return True
    with path.open(encoding="utf-8", errors="replace") as handle:
        head = handle.read(SNIFF_CHARS)
    start = head.lstrip()[:1]
    if start == "[":
        return '"doc_id"' in head and ('"resps"' in head or '"filtered_resps"' in head or '"arguments"' in head)
    if start == "{":
        line = head.lstrip().split("\n", 1)[0]
        try:
            first = json.loads(line)
        except json.JSONDecodeError:  # a first line longer than the sniffed part: lm-eval writes doc_id first
            return len(line) == len(head.lstrip()) and re.match(r'\{\s*"doc_id"\s*:', line) is not None
        return isinstance(first, dict) and "doc_id" in first and ("filtered_resps" in first or "resps" in first)
    return False


def is_perplexity(record: dict) -> bool:
    """A ``loglikelihood_rolling`` sample: its one response is a log-likelihood, not ``[log-likelihood, is_greedy]``
    pairs (multiple choice) nor a generated text. Before v0.4.3 it is a number; since, its text, told from a generated
    number by the metric keys (v0.4.7+) or by its request's single argument (generations also carry their settings)."""
    responses = record.get("filtered_resps", record.get("resps"))
    while isinstance(responses, list) and len(responses) == 1 and isinstance(responses[0], list):
        responses = responses[0]  # raw ``resps`` nest one list per request
    if not isinstance(responses, list) or len(responses) != 1 or isinstance(responses[0], bool):
        return False
    if isinstance(responses[0], (int, float)):
        return True
    try:
        float(responses[0])
    except (TypeError, ValueError):
        return False
    arguments = record.get("arguments")
    single = isinstance(arguments, dict) and all(isinstance(a, dict) and list(a) == ["arg_0"] for a in arguments.values())
    return single or any(key in record for key in PERPLEXITY_METRICS)


def sample_files(folder: Path) -> list[Path]:
    """The ``--log_samples`` files anywhere under a folder, sorted."""
    return sorted(p for p in folder.rglob("*.json*") if p.suffix in (".json", ".jsonl") and p.is_file()
                  and not p.name.startswith("results") and looks_like_samples(p))


def read_lm_eval(paths: list[Path], options: ReadOptions) -> list[Source]:
    """One :class:`Source` per samples file; a folder is one run (its name), a file is one run.

    With ``runs_by="file"`` every samples file (given, or found in a folder given) is one run
    of one task: ``options.task`` names it, else the files' common task name.
    """
    if options.runs_by == "file":
        return _read_files_as_runs(paths, options)
    tasks: dict[Path, str] = {}

    def task_of(file: Path) -> str:
        if file not in tasks:
            tasks[file] = _task_name(file)
        return tasks[file]

    units = run_folders(paths, sample_files, task_of, "lm-evaluation-harness samples")
    if options.task is not None:
        units = [(path, [f for f in files if tasks[f] == options.task]) for path, files in units]
        if not any(files for _, files in units):
            found = ", ".join(sorted(set(tasks.values())))
            raise SeedscopeError(f"no lm-eval samples of task {options.task!r} (tasks found: {found})")
    names = _unit_names(units, tasks, options)
    sources = [_read_file(file, name, tasks[file], options) for (_, files), name in zip(units, names) for file in files]
    if options.filter is not None and not any(s.used == options.filter for s in sources):
        found = sorted({f for s in sources for f in s.filters})
        raise SeedscopeError(f"no input has the lm-eval filter {options.filter!r} (filters found: {', '.join(found)})")
    return [s.source for s in sources]


def _read_files_as_runs(paths: list[Path], options: ReadOptions) -> list[Source]:
    files = [file for path in paths for file in ([path] if path.is_file() else sample_files(path))]
    if not files:
        raise SeedscopeError(f"no lm-evaluation-harness samples files in {', '.join(map(str, paths))}")
    names = run_names(files, options.run_names) if options.run_names is not None else distinguishing_names(files)
    tasks = {_task_name(file) for file in files}
    task = options.task or (tasks.pop() if len(tasks) == 1 else None)
    sources = [_read_file(file, name, task, options) for file, name in zip(files, names)]
    if task is None:
        warnings.warn(f"lm-eval: {len(files)} samples files read as runs of one task; name the task with --task",
                      ReadingChoiceWarning, stacklevel=2)
    if options.filter is not None and not any(s.used == options.filter for s in sources):
        found = sorted({f for s in sources for f in s.filters})
        raise SeedscopeError(f"no input has the lm-eval filter {options.filter!r} (filters found: {', '.join(found)})")
    return [s.source for s in sources]


#: what separates the parts of an lm-eval file name (``model_args`` and task are joined by ``_``)
NAME_SEPARATORS = re.compile(r"[_,:./=\s]+")


def distinguishing_names(files: list[Path]) -> list[str]:
    """Each file's name without the parts every file shares: ``…boolq.yaml:template-3`` → ``template-3``.

    The common prefix and suffix are cut at separators (``_ , : . / =``), so ``template-3`` and
    ``template-10`` keep their numbers whole; files whose names do not differ are named as
    :func:`seedscope.io.common.run_names` names them (by folder).
    """
    stems = [file.stem for file in files]
    if len(files) == 1 or len(set(stems)) < len(stems):
        return run_names(files)
    prefix = _shared_head(stems)
    suffix = _shared_head([stem[::-1] for stem in stems])
    names = [stem[prefix:len(stem) - suffix].strip("_,:./= ") for stem in stems]
    return names if all(names) and len(set(names)) == len(names) else run_names(files)


def _shared_head(texts: list[str]) -> int:
    """Length of the longest start all texts share that ends right after a separator in each."""
    shared = len(os.path.commonprefix(texts))
    cuts = [m.end() for m in NAME_SEPARATORS.finditer(texts[0][:shared])]
    return max(cuts, default=0)


def _unit_names(units: list[tuple[Path, list[Path]]], tasks: dict[Path, str], options: ReadOptions) -> list[str]:
    """Folder name for a folder; for a file the seed in its results file, else its file name.

    Seeds name file runs only when every file has one and no two files of a task share it
    (runs that vary only, say, the few-shot seed get the full seed list as name).
    """
    paths = [path for path, _ in units]
    if options.run_names is not None:
        return run_names(paths, options.run_names)
    names = dict(zip(paths, run_names(paths)))
    files = [path for path in paths if path.is_file()]
    seeds = {path: _seed_name(path) for path in files}
    keys = [(seeds[path], tasks[path]) for path in files]
    if files and all(seeds.values()) and len(set(keys)) == len(keys):
        names.update(seeds)
    return [names[path] for path in paths]


def _seed_name(samples: Path) -> str | None:
    """``"3"`` when ``--seed 3`` set all four seeds; else ``random_seed=…,numpy_seed=…,…``."""
    results = _results_file(samples)
    if results is None:
        return None
    document = expect(load_json(results), "an object", f"{results} (an lm-eval results file)")
    config = member(document, "config", "an object", str(results), default={})
    seeds = {key: config[key] for key in SEED_KEYS if config.get(key) is not None}
    if "random_seed" not in seeds:
        return None
    if len(seeds) == len(SEED_KEYS) and len(set(map(str, seeds.values()))) == 1:
        return str(seeds["random_seed"])
    return ",".join(f"{key}={value}" for key, value in seeds.items())


def _results_file(samples: Path) -> Path | None:
    """``results_<datetime>.json`` beside ``samples_<task>_<datetime>.jsonl``, else the only results file there."""
    match = SAMPLES_STEM.match(samples.stem)
    if match:
        exact = samples.with_name(f"results_{match['stamp']}.json")
        if exact.is_file():
            return exact
    candidates = sorted(samples.parent.glob("results*.json"))
    return candidates[0] if len(candidates) == 1 else None


def _task_name(samples: Path) -> str:
    """From ``samples_<task>_<datetime>``; for old ``<model_args>_<task>`` files from the results file."""
    match = SAMPLES_STEM.match(samples.stem)
    if match:
        return match["task"]
    results = _results_file(samples)
    if results is not None:
        document = expect(load_json(results), "an object", f"{results} (an lm-eval results file)")
        known = list(member(document, "results", "an object", str(results), default={}))
        fitting = [t for t in known if samples.stem == t or samples.stem.endswith(f"_{t}")]
        if fitting:
            return max(fitting, key=len)
    return samples.stem


@dataclass
class _Read:
    """A file's source plus which filters it had and which one was used (for the filter check)."""

    source: Source
    filters: list[str]
    used: str


def _read_file(path: Path, run: str, task: str | None, options: ReadOptions) -> _Read:
    records, unit = _records(path)
    source = Source(path, pd.DataFrame(), unit, regression=False)
    by_filter: dict[str, list[tuple[int, dict]]] = {}
    for number, record in records:
        by_filter.setdefault(str(record.get("filter", DEFAULT_FILTER)), []).append((number, record))
    filters = list(by_filter)
    chosen = _choose_filter(filters, options.filter, task, path)
    if len(filters) > 1 and options.filter is None:
        warnings.warn(
            f"lm-eval task {task}: filters {', '.join(filters)}; using {chosen!r} (pick another with filter= / --filter)",
            ReadingChoiceWarning, stacklevel=2,
        )
    rows = [_row(record, source.where(number)) + (number,) for number, record in by_filter[chosen]]
    source.frame = _frame(rows, run, task)
    return _Read(source, filters, chosen)


def _choose_filter(filters: list[str], wanted: str | None, task: str, path: Path) -> str:
    if wanted is not None and wanted in filters:
        return wanted
    if wanted is not None and len(filters) > 1:
        raise SeedscopeError(f"{path}: task {task} has no filter {wanted!r} (filters: {', '.join(filters)})")
    return DEFAULT_FILTER if DEFAULT_FILTER in filters else filters[0]


def _records(path: Path) -> tuple[list[tuple[int, dict]], str]:
    """(line or record number, sample) pairs; a pretty-printed array is the pre-0.4.3 format."""
    numbered, unit = json_records(path)
    for number, record in numbered:
        if "doc_id" not in record:
            raise SeedscopeError(f"{path} {unit} {number}: not an lm-eval sample (no doc_id)")
    return numbered, unit


def _row(record: dict, where: str) -> tuple:
    """(doc_id, prediction, label, probabilities or None) of one sample."""
    doc_id = _integer(record["doc_id"], where)
    responses = record.get("filtered_resps", record.get("resps"))
    if not isinstance(responses, list) or not responses:
        raise SeedscopeError(f"{where}: no filtered_resps to read a prediction from")
    if is_perplexity(record):
        raise SeedscopeError(f"{where}: a perplexity task's sample (loglikelihood_rolling: one log-likelihood per "
                             "document) is no prediction; read its runs as scores (read_run_scores, or analyze)")
    scores = [_loglikelihood(r, where) for r in responses]
    if None in scores and any(score is not None for score in scores):
        raise SeedscopeError(f"{where}: filtered_resps mixes [log-likelihood, is_greedy] pairs with other values "
                             f"(response {scores.index(None)}: {responses[scores.index(None)]!r})")
    if None not in scores:
        top = max(scores)
        if top == -math.inf:
            raise SeedscopeError(f"{where}: every choice has log-likelihood -inf (the model gave no score)")  # plain floats: a few choices are faster without numpy
        weights = [math.exp(score - top) for score in scores]
        total = sum(weights)
        probabilities = [weight / total for weight in weights]
        return doc_id, scores.index(top), _gold_index(record, len(scores), where), probabilities
    target = record.get("target")
    label = target if isinstance(target, str) or target is None else json.dumps(target)
    return doc_id, _text(responses), label, None


def _integer(value, where: str, name: str = "doc_id") -> int:
    """An integer (``7``, ``7.0`` or ``"7"``); a fraction, a bool or text is an error naming ``name``."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+(\.0*)?\s*", value):
        number = int(float(value))
    if number is None:
        raise SeedscopeError(f"{where}: {name} {value!r} is not an integer")
    return number


def _loglikelihood(response, where: str) -> float | None:
    """The log-likelihood of a ``[ll, is_greedy]`` pair (strings since v0.4.3), else None.

    A pair whose log-likelihood is not a number is an error, not a generated text.
    """
    while isinstance(response, list) and len(response) == 1 and isinstance(response[0], list):
        response = response[0]  # raw ``resps`` nest one list per repeat
    if not isinstance(response, list) or len(response) != 2 or response[1] not in _GREEDY:
        return None
    try:
        value = float(response[0])
    except (TypeError, ValueError):
        raise SeedscopeError(f"{where}: log-likelihood {response[0]!r} is not a number") from None
    if math.isnan(value) or value == math.inf:
        raise SeedscopeError(f"{where}: log-likelihood {response[0]!r} is {'NaN' if math.isnan(value) else 'infinite'}, "
                             "not a log-probability (the model gave no score)")
    return value


def _text(responses: list) -> str:
    first = responses[0]
    while isinstance(first, list):
        first = first[0] if first else ""
    return "" if first is None else str(first)


def _gold_index(record: dict, n_choices: int, where: str) -> int:
    """Gold choice: from a ``[gold, predicted]`` f1 / mcc pair, an index target, or the choice text."""
    for key in ("f1", "mcc"):
        pair = record.get(key)
        if isinstance(pair, list) and len(pair) == 2 and not isinstance(pair[0], list):
            index = _integer(pair[0], where, f"{key} gold")
            if not 0 <= index < n_choices:
                raise SeedscopeError(f"{where}: {key} gold {index} is not one of the {n_choices} choices")
            return index
    target = record.get("target")
    try:
        index = int(str(target).strip())
        if 0 <= index < n_choices:
            return index
    except ValueError:
        pass
    choices = [c.strip() for c in _choice_texts(record)]
    if str(target).strip() in choices:
        return choices.index(str(target).strip())
    raise SeedscopeError(f"{where}: cannot tell which of the {n_choices} choices the target {target!r} is")


def _choice_texts(record: dict) -> list[str]:
    """Each request's continuation: ``arguments.gen_args_<i>.arg_1`` (v0.4.3+) or ``arguments[i][1]``."""
    arguments = record.get("arguments")
    if isinstance(arguments, dict):
        ordered = sorted(arguments.items(), key=lambda item: int(re.sub(r"\D", "", item[0]) or 0))
        return [str(value.get("arg_1", "")) for _, value in ordered if isinstance(value, dict)]
    if isinstance(arguments, list):
        return [str(item[1]) for item in arguments if isinstance(item, list) and len(item) > 1]
    return []


def _frame(rows: list[tuple], run: str, task: str | None) -> pd.DataFrame:
    """The prediction table of one file, sorted by doc_id (multi-GPU files are not)."""
    doc_ids, predictions, labels, probabilities, lines = zip(*rows)
    frame = pd.DataFrame({RUN: run, "_doc": doc_ids, PREDICTION: predictions, LABEL: labels, LINE: lines})
    if all(p is not None for p in probabilities):
        width = max(map(len, probabilities))
        matrix = np.array([p + [0.0] * (width - len(p)) for p in probabilities])  # absent choices: 0
        frame = pd.concat([frame, pd.DataFrame(matrix, columns=[f"{PROB_PREFIX}{i}" for i in range(width)])], axis=1)
    frame = frame.sort_values("_doc", kind="stable").reset_index(drop=True)
    frame.insert(1, EXAMPLE_ID, frame.pop("_doc").astype(str))
    if task is not None:
        frame["task"] = task
    if frame[LABEL].isna().all():
        frame = frame.drop(columns=LABEL)
    return frame
