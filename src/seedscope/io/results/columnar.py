"""The fast path for the common large case: one plain prediction file per run, read column by column.

Parquet, CSV or TSV files with an id, a class prediction and optionally a gold label (nothing
else that the long table would carry: no run, task, text, cluster or probability columns) are
read with pyarrow and aligned straight into S × N small-integer codes: the example ids are
sorted once, each run's ids are matched to them only when its order differs, and each run's
predictions are dictionary-encoded, so no S·N-row table of Python strings is ever built.
Integer ids (and whole-number float ids) stay int64 when every file has them, as the long-table
path keeps them (:func:`seedscope.predictions.normal_ids`); files mixing them with text ids go there.

Anything this path does not cover — and any file that would fail a check (a missing or
duplicate id, runs over different ids, runs disagreeing on a gold label, non-whole numbers) —
returns None, and the long-table readers take over and give their located messages. The
result is the one :func:`seedscope.predictions.align_runs` gives for the same files.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from seedscope import parquet_ahead
from seedscope.errors import SeedscopeError
from seedscope.io.common import LINE, PASSTHROUGH_COLUMNS, ReadOptions, pick_column, run_names
from seedscope.io.results.tabular import (
    ID_NAMES, LABEL_NAMES, PREDICTION_NAMES, PROB_LIST_NAMES, RUN_NAMES, SEPARATORS, check_last_line, unterminated_last_line,
)
from seedscope.predictions import PROB_PREFIX, AlignedRuns, class_list, code_dtype, label_key, text_order

#: options under which the long-table readers must run (they change what a row means)
LONG_TABLE_OPTIONS = ("run_column", "prob_columns", "cluster_column", "task", "data_dir", "filter", "runs_by", "metric")
#: integer classes spanning at most this many values are found by comparisons, more by a bincount
SCANNED_OFFSETS = 32
#: the offsets looked at first for each class, before all of them
PREFIX = 4096


@dataclass
class _Run:
    """One file's predictions (and labels) as dictionary indices in the sorted example order."""

    predictions: np.ndarray
    prediction_values: list
    labels: np.ndarray | None
    label_values: list


def read_aligned(paths: list[Path], fmt: str, options: ReadOptions) -> AlignedRuns | None:
    """Aligned runs of per-run classification files, or None when the long-table path must read them."""
    if fmt not in ("parquet", *SEPARATORS) or len(paths) < 2 or not all(p.is_file() for p in paths):
        return None
    if options.task_type == "regression" or any(getattr(options, name) is not None for name in LONG_TABLE_OPTIONS):
        return None
    names = run_names(paths, options.run_names)
    reference = order = sorted_ids = first_rows = None
    runs, gold_seen = [], {}
    for path in paths:
        columns = _columns(_column_names(path, fmt), options, path)
        table = _read(path, fmt, columns) if columns is not None else None
        if table is None:
            return None
        ids = _ids(table.column(columns[0]))
        if ids is None or (reference is not None and (len(ids) != len(reference) or ids.type != reference.type)):
            return None
        if reference is None:
            if pa.types.is_string(ids.type) and _whole_decimals(ids):
                return None
            reference, order = ids, _text_order(ids)
            sorted_ids = pc.take(ids, order)
            if _repeats(sorted_ids):
                return None
            first_rows = rows = _gather(order.to_numpy())
        elif ids.equals(reference):
            rows = first_rows
        else:
            matched = pc.index_in(sorted_ids, value_set=ids.combine_chunks())
            if matched.null_count or pc.count_distinct(ids).as_py() != len(ids):
                return None
            rows = matched.to_numpy()
        run = _encode(table, columns, rows, gold_seen)
        if run is None:
            return None
        runs.append(run)
    aligned = _aligned(names, sorted_ids, runs)
    pa.default_memory_pool().release_unused()  # hand the files' buffers back: only the codes stay
    return aligned


def _repeats(sorted_ids: pa.Array) -> bool:
    """Whether sorted ids hold one twice (neighbours equal): a tenth of the cost of counting distinct strings."""
    return len(sorted_ids) > 1 and pc.any(pc.equal(sorted_ids[1:], sorted_ids[:-1])).as_py()


def _column_names(path: Path, fmt: str) -> list[str] | None:
    """The file's column names, from the Parquet schema or the CSV header, before any data is read."""
    try:
        if fmt == "parquet":
            return pq.read_schema(path).names
        with path.open(encoding="utf-8-sig", newline="") as handle:
            return next(csv.reader(handle, delimiter=SEPARATORS[fmt]), [])
    except (pa.ArrowException, OSError, ValueError):  # the long-table reader names what is wrong
        return None


def _columns(names: list[str] | None, options: ReadOptions, path: Path) -> tuple[str, str, str | None] | None:
    """(id, prediction, label) columns, or None when the file carries more than this path reads."""
    if not names:
        return None
    lowered = {name.lower() for name in names}
    if lowered & {*RUN_NAMES, *PASSTHROUGH_COLUMNS, *PROB_LIST_NAMES} or any(n.startswith(PROB_PREFIX) for n in names):
        return None
    try:
        id_column = pick_column(names, options.id_column, ID_NAMES, path)
        prediction = pick_column(names, options.prediction_column, PREDICTION_NAMES, path)
        label = pick_column(names, options.label_column, LABEL_NAMES, path)
    except SeedscopeError:  # a named column that is absent: the long-table reader says so
        return None
    return None if id_column is None or prediction is None else (id_column, prediction, label)


def _read(path: Path, fmt: str, columns: tuple[str, str, str | None]) -> pa.Table | None:
    """Only the id, prediction and label columns; the id as text, so ``007`` stays ``007``."""
    wanted = [c for c in columns if c is not None]
    try:
        if fmt == "parquet":
            ahead = parquet_ahead.take(path)  # decoded while the command was importing, if it asked for that
            if ahead is not None and set(wanted) <= set(ahead.column_names):
                return ahead.select(wanted)
            return pq.read_table(path, columns=wanted)
        table = pacsv.read_csv(path, parse_options=pacsv.ParseOptions(delimiter=SEPARATORS[fmt]),
                               convert_options=pacsv.ConvertOptions(
                                   include_columns=wanted, column_types={columns[0]: pa.string()},
                                   strings_can_be_null=True))  # "" is missing, as in pandas
    except (pa.ArrowException, OSError, ValueError):  # the long-table reader names what is wrong
        return None
    if unterminated_last_line(path, SEPARATORS[fmt]):  # a file cut short is refused here as there
        check_last_line(path, table.to_pandas().assign(**{LINE: range(2, table.num_rows + 2)}), SEPARATORS[fmt])
    return table


def _ids(ids: pa.ChunkedArray) -> pa.ChunkedArray | None:
    """Ids as int64 (integers, or floats that are all whole numbers) or as text; None for null or other ids.

    They stay in the file's chunks: compared and sorted as they are, a run's ids are never copied into one array."""
    if ids.null_count:
        return None
    if pa.types.is_floating(ids.type):
        whole = pc.all(pc.and_(pc.equal(pc.floor(ids), ids), pc.less_equal(pc.abs(ids), 2.0 ** 53))).as_py()
        return pc.cast(ids, pa.int64()) if whole is not False else None
    if pa.types.is_integer(ids.type):
        if pa.types.is_uint64(ids.type) and pc.max(ids).as_py() > np.iinfo(np.int64).max:
            return None  # the long-table path makes them text
        return pc.cast(ids, pa.int64())
    if pa.types.is_large_string(ids.type):
        ids = pc.cast(ids, pa.string())
    return ids if pa.types.is_string(ids.type) else None


def _text_order(ids: pa.ChunkedArray) -> pa.Array:
    """Sorting indices into the ids' text order (:func:`seedscope.predictions.text_order`): numbers without text."""
    if pa.types.is_int64(ids.type):
        return pa.array(text_order(ids.to_numpy()))
    return pc.array_sort_indices(ids)


def _whole_decimals(ids: pa.ChunkedArray) -> bool:
    """True when some id reads ``7.0``: it is the id 7, which the long-table reader makes of it (checked on the
    first run only: another run's ``7.0`` against a ``7`` does not match it, and sends the files there too)."""
    return pc.any(pc.match_substring(ids, ".")).as_py() and \
        pc.any(pc.match_substring_regex(ids, r"^\s*[+-]?\d+\.0*\s*$")).as_py()


def _classes(values: pa.ChunkedArray, allow_null: bool) -> pa.ChunkedArray | None:
    """A class column (in its chunks) with whole floats made integers; None for fractions (regression) or unusable
    values."""
    if values.null_count and not allow_null:
        return None
    if pa.types.is_large_string(values.type):  # pandas writes its string columns this way
        values = pc.cast(values, pa.string())
    if pa.types.is_floating(values.type):
        present = pc.drop_null(values)
        whole = pc.and_(pc.is_finite(present), pc.equal(pc.floor(present), present))  # ±inf: the long path names it
        if len(present) and not pc.all(whole).as_py():
            return None
        return pc.cast(values, pa.int64())
    if pa.types.is_integer(values.type) or pa.types.is_boolean(values.type) or pa.types.is_string(values.type):
        return values
    return None


def _gather(rows: np.ndarray) -> np.ndarray | None:
    """The positions that put a file's rows in id order; None when they already are (no gather needed)."""
    return None if np.array_equal(rows, np.arange(len(rows))) else rows


def _encode(table: pa.Table, columns: tuple, rows: np.ndarray | None, gold_seen: dict) -> _Run | None:
    """One run's codes; the gold column of the run before, when this one's is the same, is reused as it is."""
    predictions = _classes(table.column(columns[1]), allow_null=False)
    if predictions is None:
        return None
    indices, values = _dictionary(predictions)
    labels = label_values = None
    if columns[2] is not None:
        gold = _classes(table.column(columns[2]), allow_null=True)
        if gold is None:
            return None
        last = gold_seen.get("last")
        if last is not None and last[0] is rows and last[1].equals(gold):
            labels, label_values = last[2], last[3]
        else:
            gold_indices, label_values = _dictionary(gold)
            labels = _in_order(_small(gold_indices), rows)
            gold_seen["last"] = (rows, gold, labels, label_values)
    return _Run(_in_order(_small(indices), rows), values, labels, label_values or [])


def _dictionary(values: pa.ChunkedArray) -> tuple[np.ndarray, list]:
    """(indices into the distinct values, those values), a null pointing one past them ("missing").

    Integer classes in a short range are indexed by their offset from the smallest, without hashing (a
    third of the time of a dictionary encoding, per run), written chunk by chunk straight into int8;
    anything else is dictionary-encoded.
    """
    if pa.types.is_integer(values.type) and not pa.types.is_uint64(values.type) and len(values) \
            and not values.null_count:
        bounds = pc.min_max(values)
        low, high = bounds["min"].as_py(), bounds["max"].as_py()
        if high - low < np.iinfo(np.int8).max:
            offsets, start = np.empty(len(values), dtype=np.int8), 0
            for chunk in values.chunks:
                stop = start + len(chunk)
                np.subtract(chunk.to_numpy(), low, out=offsets[start:stop], dtype=np.int64, casting="unsafe")
                start = stop
            seen = _seen(offsets, high - low + 1)
            index = offsets if seen.all() else (np.cumsum(seen, dtype=np.int8) - 1)[offsets]
            return index, (np.flatnonzero(seen) + low).tolist()
    encoded = pc.dictionary_encode(values.combine_chunks())
    distinct = encoded.dictionary.to_pylist()
    return pc.fill_null(encoded.indices, len(distinct)).to_numpy(), distinct


def _seen(offsets: np.ndarray, size: int) -> np.ndarray:
    """Which offsets 0 … size − 1 occur, the smallest and largest known to: a byte comparison for each one
    between (a bincount casts every offset to 64 bits first, the cost of some forty comparisons), over the first
    few thousand first (where a class of any size turns up), over all only for a class not found there."""
    if size > SCANNED_OFFSETS:
        return np.bincount(offsets, minlength=size) > 0
    head = offsets[:PREFIX]
    return np.array([value in (0, size - 1) or bool((head == value).any()) or bool((offsets == value).any())
                     for value in range(size)])


def _in_order(values: np.ndarray, rows: np.ndarray | None) -> np.ndarray:
    return values if rows is None else values[rows]


def _small(indices: np.ndarray) -> np.ndarray:
    return indices.astype(code_dtype(int(indices.max(initial=0)) + 1), copy=False)


def _aligned(names: list[str], sorted_ids: pa.ChunkedArray, runs: list[_Run]) -> AlignedRuns | None:
    seen = [v for run in runs for v in run.prediction_values + run.label_values]
    classes = class_list(pd.Series(seen, dtype=object), [])
    codes = {label_key(c): i for i, c in enumerate(classes)}
    dtype = code_dtype(len(classes))

    def recode(indices: np.ndarray, values: list, *, may_miss: bool = True) -> np.ndarray:
        """The codes of ``indices``: the indices themselves when they are (and none points past ``values``)."""
        mapped = [codes[label_key(v)] for v in values]
        if not may_miss and mapped == list(range(len(values))):
            return indices
        return np.array(mapped + [-1], dtype=dtype)[indices]

    predictions = np.empty((len(runs), len(sorted_ids)), dtype=dtype)
    labels = previous = None
    for s, run in enumerate(runs):
        predictions[s] = recode(run.predictions, run.prediction_values, may_miss=False)  # predictions have no null
        if run.labels is not None and run.labels is not previous:  # the same gold as the run before: nothing new
            previous = run.labels
            gold = recode(run.labels, run.label_values)
            if labels is None:
                labels = gold
            else:
                both = (labels >= 0) & (gold >= 0)
                if (labels[both] != gold[both]).any():
                    return None  # runs disagree on a gold label: the long-table path names the examples
                labels = np.where(labels >= 0, labels, gold)
    if labels is not None and not (labels >= 0).any():
        labels = None
    example_ids = sorted_ids.to_numpy(zero_copy_only=False)
    example_ids = example_ids if example_ids.dtype == np.int64 else example_ids.astype(object)
    return AlignedRuns(names, example_ids, "classification", predictions, labels, classes)
