"""lighteval details (``--save-details``): one Parquet file per task and run, one row per sample.

Since lighteval 0.11 a row holds three structs: ``doc`` (``id``, ``query``, ``choices``,
``gold_index``, ``task_name``), ``model_response`` (``logprobs`` of each choice, or generated
``text``) and ``metric`` (one value per metric). A file is one run, named after its folder
(lighteval writes one timestamped folder per run) or, when files share a folder, after the file.

Multiple choice (log-probabilities): prediction = the argmax choice (what ``acc`` uses),
probabilities = their softmax, label = the gold index, as for lm-evaluation-harness. Generation,
or a ``metric=`` named on the command line: the per-sample metric value decides — a 0 / 1 value
gives classes (the gold answer when scored 1, the generated text otherwise), any other value
per-example scores whose mean per run is the run's metric.
"""

from __future__ import annotations

import math
import re
import warnings
from pathlib import Path

import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source, run_names, scored_prediction
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, PROB_PREFIX, RUN

COLUMNS = ("doc", "metric", "model_response")
STEM = re.compile(r"^details_(?P<task>.+)_(?P<stamp>\d{4}-\d\d-\d\dT[\d\-.:]+)$")


def is_details(path: Path) -> bool:
    """A Parquet file with lighteval's ``doc``, ``metric`` and ``model_response`` columns."""
    if path.suffix != ".parquet" or not path.is_file():
        return False
    import pyarrow.parquet as pq

    try:
        names = set(pq.read_schema(path).names)
    except Exception:  # not Parquet at all: the table reader says so
        return False
    return set(COLUMNS) <= names


def details_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.parquet") if is_details(p))


def read_lighteval(paths: list[Path], options: ReadOptions) -> list[Source]:
    files = [file for path in paths for file in ([path] if path.is_file() else details_files(path))]
    if not files:
        raise SeedscopeError(f"no lighteval details files in {', '.join(map(str, paths))}")
    names = run_names(files, options.run_names, by_folder=True)
    return [_source(file, name, options.metric) for file, name in zip(files, names)]


def _source(path: Path, run: str, metric: str | None) -> Source:
    import pyarrow.parquet as pq

    try:
        records = pq.read_table(path, columns=list(COLUMNS)).to_pylist()
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise SeedscopeError(f"{path} is not a readable lighteval details file ({error})") from None
    if not records:
        raise SeedscopeError(f"{path} holds no samples")
    metrics = list(records[0]["metric"] or {})
    if metric is not None and metric not in metrics:
        raise SeedscopeError(f"{path}: no metric {metric!r} (metrics: {', '.join(metrics)}); pick one with --metric")
    choice = metric is None and bool((records[0]["model_response"] or {}).get("logprobs"))
    chosen = metric or metrics[0]
    values = [(record["metric"] or {}).get(chosen) for record in records]
    if not choice and any(v is None for v in values):
        raise SeedscopeError(f"{path} row {values.index(None) + 1}: no value of metric {chosen}")
    numbers = not choice and not all(v in (0, 1) for v in values)
    if choice:
        rows = [_choice_row(record) for record in records]
    else:
        rows = [_scored_row(record, value, numbers) for record, value in zip(records, values)]
    frame = pd.DataFrame(rows)
    frame.insert(0, RUN, run)
    frame[LINE] = range(1, len(frame) + 1)
    doc = records[0]["doc"] or {}
    match = STEM.match(path.stem)
    frame["task"] = doc.get("task_name") or (match["task"] if match else path.stem)
    used = "the argmax of the choices' log-likelihoods (acc)" if choice else f"metric {chosen}"
    warnings.warn(f"lighteval details {path.name}: {used}", ReadingChoiceWarning, stacklevel=2)
    return Source(path, frame, unit="row", regression=numbers)


def _gold(doc: dict) -> int:
    gold = doc.get("gold_index")
    return int(gold[0] if isinstance(gold, list) else gold)


def _choice_row(record: dict) -> dict:
    doc, response = record["doc"], record["model_response"]
    logprobs = list(response["logprobs"])
    top = max(logprobs)
    weights = [math.exp(v - top) for v in logprobs]
    row = {EXAMPLE_ID: str(doc.get("id")), PREDICTION: logprobs.index(top), LABEL: _gold(doc)}
    row.update({f"{PROB_PREFIX}{i}": w / sum(weights) for i, w in enumerate(weights)})
    return row


def _scored_row(record: dict, value, numbers: bool) -> dict:
    """A sample judged by its metric: a per-example score, or (0 / 1) the gold answer or the generated text."""
    doc, response = record["doc"], record["model_response"] or {}
    if numbers:
        return {EXAMPLE_ID: str(doc.get("id")), PREDICTION: float(value)}
    texts = response.get("text_post_processed") or response.get("text") or [None]
    choices = doc.get("choices") or []
    gold = str(choices[_gold(doc)]) if choices else None
    return {EXAMPLE_ID: str(doc.get("id")), PREDICTION: scored_prediction(value == 1, texts[0], gold), LABEL: gold}
