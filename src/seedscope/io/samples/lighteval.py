"""lighteval details with n generations per document (``pass@k``, ``avg@n``, ``maj@n`` tasks) as sample tables.

A details row keeps the document, its n generated texts (``model_response.text``, or
``text_post_processed`` when lighteval post-processed them) and one value per metric for the
document as a whole: which of the n samples were right is not written. lighteval's sampling
metrics judge each sample by comparing it with the gold answer (``choices[gold_index]``):
``pass@k`` and ``avg@n`` after stripping both, ``maj@n`` as they are (its majority answer).
Each sample is judged that way here, and the verdicts are checked against the file's own value
of the metric for every document: a task whose metric normalises answers or scores them with
its own function (math answers, letters …) disagrees, and is refused with the document named,
rather than read with verdicts lighteval did not give.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import ReadOptions, run_names
from seedscope.io.results.lighteval import COLUMNS, _doc_id, _gold, details_files
from seedscope.io.validate import cannot_read, check_input, expect, member
from seedscope.metrics.sampled import pass_at_k
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN
from seedscope.samples import CORRECT, SAMPLE, TEXT

#: ``pass@k:k=1&n=4``, ``avg@n:n=4``, ``maj@n:n=4``: the sampling metrics whose per-sample verdict is known
SAMPLING = re.compile(r"^(?P<name>pass@k|avg@n|maj@n):(?P<params>.+)$")


def read_lighteval_samples(paths: list[Path], options: ReadOptions) -> pd.DataFrame:
    """The sample table of details files: one run per file (named as for predictions), n samples per document."""
    files = [file for path in paths for file in ([path] if path.is_file() else details_files(path))]
    if not files:
        raise SeedscopeError(f"no lighteval details files in {', '.join(map(str, paths))}")
    names = run_names(files, options.run_names, by_folder=True)
    return pd.concat([_file_samples(file, name, options.metric) for file, name in zip(files, names)], ignore_index=True)


def _file_samples(path: Path, run: str, metric: str | None) -> pd.DataFrame:
    import pyarrow.parquet as pq

    check_input(path)
    try:
        records = pq.read_table(path, columns=list(COLUMNS)).to_pylist()
    except OSError as error:
        raise cannot_read(path, error) from None
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise SeedscopeError(f"{path} is not a readable lighteval details file ({error})") from None
    if not records:
        raise SeedscopeError(f"{path} holds no samples")
    name, params, chosen = _metric(path, records[0], metric)
    rows = []
    for number, record in enumerate(records, start=1):
        where = f"{path} row {number}"
        doc = member(record, "doc", "an object", where)
        response = member(record, "model_response", "an object", where, default={}) or {}
        texts = response.get("text_post_processed") or response.get("text")
        texts = expect(texts, "a list", f"{where}: model_response 'text'")
        if not texts:
            raise SeedscopeError(f"{where}: model_response 'text' is empty: no generation to read")
        choices = member(doc, "choices", "a list", f"{where}: doc")
        gold = str(choices[_gold(doc, len(choices), where)])
        answers = ["" if text is None else str(text) for text in texts]
        verdicts = [float(answer.strip() == gold.strip()) for answer in answers]
        _check(record, where, name, params, chosen, answers, verdicts, gold)
        doc_id = _doc_id(doc, where)
        rows += [{RUN: run, EXAMPLE_ID: doc_id, SAMPLE: i, CORRECT: v, PREDICTION: a.strip(), LABEL: gold, TEXT: a}
                 for i, (a, v) in enumerate(zip(answers, verdicts))]
    task = member(records[0]["doc"], "task_name", "a string", f"{path} row 1: doc", default=None) or path.stem
    return pd.DataFrame(rows).assign(task=task)


def _metric(path: Path, record: dict, given: str | None) -> tuple[str, dict[str, int], str]:
    """(kind, parameters, full name) of the metric the verdicts are checked against: ``given``, else the first."""
    metrics = list(member(record, "metric", "an object", f"{path} row 1", default={}) or {})
    if given is not None and given not in metrics:
        raise SeedscopeError(f"{path}: no metric {given!r} (metrics: {', '.join(metrics)}); pick one with --metric")
    found = [m for m in ([given] if given else metrics) if SAMPLING.match(m)]
    if not found:
        raise SeedscopeError(f"{path}: {'metric ' + repr(given) if given else 'no metric'} is a sampling metric whose "
                             f"per-sample verdicts seedscope knows (pass@k, avg@n, maj@n; the file has "
                             f"{', '.join(metrics) or 'none'})")
    chosen = found[0]
    match = SAMPLING.match(chosen)
    params = {}
    for part in match["params"].split("&"):
        key, _, value = part.partition("=")
        if not value.isdigit():
            raise SeedscopeError(f"{path}: metric {chosen}: parameter {part!r} is not a whole number")
        params[key] = int(value)
    warnings.warn(f"lighteval details {path.name}: each sample judged as {chosen} judges it, checked against its value",
                  ReadingChoiceWarning, stacklevel=3)
    return match["name"], params, chosen


def _check(record: dict, where: str, name: str, params: dict, chosen: str, answers: list[str], verdicts: list[float],
           gold: str) -> None:
    """The document's recorded metric value must follow from the verdicts (lighteval's own formula), else an error."""
    value = (record.get("metric") or {}).get(chosen)
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise SeedscopeError(f"{where}: metric {chosen} is {value!r}, not a number")
    n = params.get("n", len(answers))  # fewer answers than n: lighteval still divides by n (a note says n differs)
    if name == "maj@n":
        kept = answers[:n]
        expected = float(max(kept, key=kept.count) == gold)
    elif name == "avg@n":
        expected = sum(verdicts[:n]) / n
    else:
        expected = float(pass_at_k(n, int(sum(verdicts[:n])), params.get("k", 1))[0])
    if not math.isclose(value, expected, rel_tol=1e-9, abs_tol=1e-9):
        raise SeedscopeError(
            f"{where}: metric {chosen} is {value:g}, but comparing each of its {len(answers[:n])} answers with the gold answer "
            f"{gold!r} gives {expected:g}: the task judges samples some other way (a normaliser or its own scorer), "
            "which the details file does not record, so the per-sample verdicts cannot be read")
