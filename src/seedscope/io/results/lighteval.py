"""lighteval details (``--save-details``): one Parquet file per task and run, one row per sample.

Since lighteval 0.11 a row holds three structs: ``doc`` (``id``, ``query``, ``choices``,
``gold_index``, ``task_name``), ``model_response`` (``logprobs`` of each choice, or generated
``text``) and ``metric`` (one value per metric). A folder of details files is one run, named
after the folder (lighteval writes one timestamped folder per run), holding one file per task:
a second file of one task there is refused, since it would be a run that was never made.

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
from seedscope.io.common import LINE, ReadOptions, Source, run_folders, run_names, scored_prediction
from seedscope.io.validate import cannot_read, check_input, damaged_parquet, expect, member
from seedscope.metrics.bounds import check_score
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, PROB_PREFIX, RUN

COLUMNS = ("doc", "metric", "model_response")
STEM = re.compile(r"^details_(?P<task>.+)_(?P<stamp>\d{4}-\d\d-\d\dT[\d\-.:]+)$")


def is_details(path: Path) -> bool:
    """A Parquet file with lighteval's columns or lighteval's name (``details_<task>_<time>.parquet``): one
    damaged, cut short or lacking a column is still lighteval's, and its reading says what is wrong with it."""
    return path.suffix == ".parquet" and path.is_file() and (_named(path) or _schema_fits(path) is True)


def _named(path: Path) -> bool:
    return STEM.match(path.stem) is not None


def _schema_fits(path: Path) -> bool | None:
    """True for lighteval's columns, False for others, None for a file whose schema cannot be read."""
    import pyarrow.parquet as pq

    try:
        names = set(pq.read_schema(path).names)
    except Exception:  # damaged, or not Parquet at all: the reader says so
        return None
    return set(COLUMNS) <= names


def details_files(folder: Path) -> list[Path]:
    """The details files under a folder; when there are some, also every damaged Parquet file there (to be named
    when read, never skipped)."""
    found = {p: True if _named(p) else _schema_fits(p) for p in sorted(folder.rglob("*.parquet")) if p.is_file()}
    if not any(fits is True for fits in found.values()):
        return []
    return [p for p, fits in found.items() if fits is not False]


def read_lighteval(paths: list[Path], options: ReadOptions) -> list[Source]:
    """One run per folder that holds details files (lighteval writes one timestamped folder per run), one file per
    task in it; a details file given by itself is one run."""
    units: dict[Path, list[Path]] = {}
    for path in paths:
        for file in [path] if path.is_file() else details_files(path):
            found = units.setdefault(file if path.is_file() else file.parent, [])
            found += [file] if file not in found else []
    if not units:
        raise SeedscopeError(f"no lighteval details files in {', '.join(map(str, paths))}")
    runs = run_folders(list(units), units.__getitem__, _task_of, "lighteval details")
    names = run_names(list(units), options.run_names, by_folder=True)
    return [_source(file, name, options.metric) for (_, files), name in zip(runs, names) for file in files]


def _task_of(path: Path) -> str:
    match = STEM.match(path.stem)
    return match["task"] if match else path.stem


def _source(path: Path, run: str, metric: str | None) -> Source:
    import pyarrow.parquet as pq

    check_input(path)
    try:
        names = pq.read_schema(path).names
        lacking = [column for column in COLUMNS if column not in names]
        if lacking:
            raise SeedscopeError(f"{path} is not a whole lighteval details file: it has no {' or '.join(lacking)} "
                                 f"column (columns: {', '.join(names)})")
        records = pq.read_table(path, columns=list(COLUMNS)).to_pylist()
    except OSError as error:
        raise cannot_read(path, error) from None
    except SeedscopeError:
        raise
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise damaged_parquet(path, error, "a readable lighteval details file") from None
    if not records:
        raise SeedscopeError(f"{path} holds no samples")
    rows = [(f"{path} row {n}", record) for n, record in enumerate(records, start=1)]
    for where, record in rows:
        member(record, "doc", "an object", where)
        member(record, "metric", "an object", where, default={})
        member(record, "model_response", "an object", where, default={})
    metrics = list(records[0]["metric"] or {})
    if metric is not None and metric not in metrics:
        raise SeedscopeError(f"{path}: no metric {metric!r} (metrics: {', '.join(metrics)}); pick one with --metric")
    choice = metric is None and bool((records[0]["model_response"] or {}).get("logprobs"))
    if not choice and not metrics:
        raise SeedscopeError(f"{path} row 1: no metric value and no log-likelihoods to read a prediction from")
    chosen = metric or metrics[0]
    numbers = False
    if choice:
        table = [_choice_row(record, where) for where, record in rows]
    else:
        values = [_metric_value(record, chosen, where) for where, record in rows]
        numbers = not all(v in (0, 1) for v in values)
        table = [_scored_row(record, value, numbers, where) for (where, record), value in zip(rows, values)]
    frame = pd.DataFrame(table)
    frame.insert(0, RUN, run)
    frame[LINE] = range(1, len(frame) + 1)
    doc = records[0]["doc"]
    match = STEM.match(path.stem)
    frame["task"] = member(doc, "task_name", "a string", f"{path} row 1: doc", default=None) or (
        match["task"] if match else path.stem)
    used = "the argmax of the choices' log-likelihoods (acc)" if choice else f"metric {chosen}"
    warnings.warn(f"lighteval details {path.name}: {used}", ReadingChoiceWarning, stacklevel=2)
    return Source(path, frame, unit="row", regression=numbers)


def _metric_value(record: dict, metric: str, where: str) -> float:
    value = (record["metric"] or {}).get(metric)
    if value is None:
        raise SeedscopeError(f"{where}: no value of metric {metric}")
    return check_score(expect(value, "a number", f"{where}: metric {metric}") if not isinstance(value, bool)
                       else float(value), metric, where)


def _doc_id(doc: dict, where: str) -> str:
    value = doc.get("id")
    expect(value, "a string" if isinstance(value, str) else "a number", f"{where}: doc 'id'")
    return str(int(value)) if isinstance(value, float) and value.is_integer() else str(value)


def _gold(doc: dict, n_choices: int | None, where: str) -> int:
    gold = doc.get("gold_index")
    first = gold[0] if isinstance(gold, list) and gold else gold
    index = expect(first, "an integer", f"{where}: doc 'gold_index'")
    if n_choices is not None and not 0 <= index < n_choices:
        raise SeedscopeError(f"{where}: doc 'gold_index' {index} is not one of the {n_choices} choices")
    return index


def _choice_row(record: dict, where: str) -> dict:
    doc, response = record["doc"], record["model_response"] or {}
    logprobs = member(response, "logprobs", "a list", f"{where}: model_response")
    if not logprobs:
        raise SeedscopeError(f"{where}: model_response 'logprobs' is empty: no choice was scored")
    choices = member(doc, "choices", "a list", f"{where}: doc", default=None)
    if choices is not None and len(choices) != len(logprobs):
        raise SeedscopeError(f"{where}: model_response has {len(logprobs)} log-likelihoods for the {len(choices)} "
                             "choices of its doc; each choice needs one")
    for number, value in enumerate(logprobs):
        if isinstance(value, float) and math.isnan(value):
            raise SeedscopeError(f"{where}: the log-likelihood of choice {number} is NaN (the model gave no score)")
        if not (isinstance(value, (int, float)) and not isinstance(value, bool)) or value == math.inf:
            raise SeedscopeError(f"{where}: the log-likelihood of choice {number} is {value!r}, not a number")
    top = max(logprobs)
    if top == -math.inf:
        raise SeedscopeError(f"{where}: every choice has log-likelihood -inf (the model gave no score)")
    weights = [math.exp(v - top) for v in logprobs]
    row = {EXAMPLE_ID: _doc_id(doc, where), PREDICTION: logprobs.index(top), LABEL: _gold(doc, len(logprobs), where)}
    row.update({f"{PROB_PREFIX}{i}": w / sum(weights) for i, w in enumerate(weights)})
    return row


def _scored_row(record: dict, value, numbers: bool, where: str) -> dict:
    """A sample judged by its metric: a per-example score, or (0 / 1) the gold answer or the generated text."""
    doc, response = record["doc"], record["model_response"] or {}
    if numbers:
        return {EXAMPLE_ID: _doc_id(doc, where), PREDICTION: float(value)}
    texts = response.get("text_post_processed") or response.get("text") or [None]
    texts = expect(texts, "a list", f"{where}: model_response 'text'") or [None]
    choices = member(doc, "choices", "a list", f"{where}: doc", default=[])
    gold = str(choices[_gold(doc, len(choices), where)]) if choices else None
    answer = texts[0]
    return {EXAMPLE_ID: _doc_id(doc, where), LABEL: gold,
            PREDICTION: scored_prediction(value == 1, None if answer is None else str(answer), gold)}
