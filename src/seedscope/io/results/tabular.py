"""Plain prediction tables: one file per run, or one long table with a run column.

CSV, TSV, JSON lines (or a JSON array of records) and Parquet. Column names are found by
common spellings (``id``/``idx``/``example_id``/``doc_id`` …) unless given; a file with a run
column (``run``/``seed``/``run_id``) is a long table, any other file is one run named after
the file. Per-class probabilities come from ``prob_<class>`` columns, a custom prefix, an
explicit ``{column: class}`` mapping, or one list-valued column (classes 0…C−1).
"""

from __future__ import annotations

import csv
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io.results.delimited import Dialect, sniff
from seedscope.io.validate import cannot_read, check_input, damaged_parquet
from seedscope.io.common import (
    LINE,
    PASSTHROUGH_COLUMNS,
    ReadOptions,
    Source,
    as_ids,
    json_records,
    missing_column,
    not_utf8,
    pick_column,
    run_names,
)
from seedscope.predictions import CLUSTER, EXAMPLE_ID, INVALID, LABEL, PREDICTION, PROB_PREFIX, RUN, label_key
from seedscope.tasks import get_task

ID_NAMES = ("example_id", "id", "idx", "doc_id", "index", "guid", "uid")
PREDICTION_NAMES = ("prediction", "pred", "predicted_label", "predictions", "predicted", "y_pred")
LABEL_NAMES = ("label", "gold", "target", "gold_label", "true_label", "y_true")
RUN_NAMES = ("run", "seed", "run_id")
PROB_LIST_NAMES = ("probs", "probabilities")
SEPARATORS = {"csv": ",", "tsv": "\t"}
FORMATS = ("csv", "tsv", "jsonl", "parquet")
#: how much of a delimited file's end is read to see whether its last line is whole
TAIL_BYTES = 64 * 1024


def read_tabular(paths: list[Path], fmt: str, options: ReadOptions) -> list[Source]:
    """One :class:`Source` per file; files without a run column are runs named after the file."""
    names = run_names(paths, options.run_names)
    return [_read_one(path, fmt, name, options) for path, name in zip(paths, names)]


def _read_one(path: Path, fmt: str, name: str, options: ReadOptions) -> Source:
    raw, unit = load_table(path, fmt, options)
    columns = [c for c in raw.columns if c != LINE]
    id_column = _id_column(columns, options, path)
    prediction_column = pick_column(columns, options.prediction_column, PREDICTION_NAMES, path)
    if prediction_column is None:
        raise missing_column("prediction", PREDICTION_NAMES, "prediction_column / --prediction-column", columns, path)
    label_column = pick_column(columns, options.label_column, LABEL_NAMES, path)
    run_column = pick_column(columns, options.run_column, RUN_NAMES, path)
    cluster_column = pick_column(columns, options.cluster_column, (), path) if options.cluster_column else None
    source = Source(path, pd.DataFrame(), unit)
    if run_column is not None and raw[run_column].isna().any():
        raise SeedscopeError(f"{source.where(raw.loc[raw[run_column].isna(), LINE].iloc[0])}: the run is empty")
    nested = raw[id_column].map(lambda v: isinstance(v, (list, dict))).to_numpy()
    if nested.any():
        raise SeedscopeError(f"{source.where(raw[LINE].iloc[int(np.argmax(nested))])}: the example id is a "
                             f"{type(raw[id_column].iloc[int(np.argmax(nested))]).__name__}, not a single id")
    frame = pd.DataFrame(
        {
            RUN: raw[run_column] if run_column is not None else name,
            EXAMPLE_ID: as_ids(raw[id_column], numbers=fmt == "parquet"),
            PREDICTION: raw[prediction_column],
        }
    )
    if label_column is not None:
        frame[LABEL] = raw[label_column]
    if cluster_column is not None:
        if raw[cluster_column].isna().any():
            raise SeedscopeError(f"{source.where(raw.loc[raw[cluster_column].isna(), LINE].iloc[0])}: the cluster is empty")
        frame[CLUSTER] = raw[cluster_column].astype(str)
    probabilities = _probabilities(raw, options.prob_columns, source)
    if probabilities is not None:
        frame = pd.concat([frame, probabilities], axis=1)
    used = {id_column, prediction_column, label_column, run_column, cluster_column}
    for column in PASSTHROUGH_COLUMNS:
        if column in raw.columns and column not in used:
            frame[column] = raw[column]
    frame[LINE] = raw[LINE]
    source.frame = _select_task(frame, options.task, source)
    return source


def _select_task(frame: pd.DataFrame, task: str | None, source: Source) -> pd.DataFrame:
    """With ``task``: keep that task's rows of a multi-task table, or label a single-task file."""
    if task is None:
        return frame
    if "task" not in frame.columns:
        _check_labels(frame, get_task(task), source)  # --task names a registry task: unknown ones are refused
        return frame.assign(task=task)
    kept = frame[frame["task"].astype(str) == task]
    if kept.empty:
        known = ", ".join(sorted(map(str, frame["task"].dropna().unique())))
        raise SeedscopeError(f"{source.path}: no rows of task {task!r} (tasks in the file: {known})")
    return kept.reset_index(drop=True)


def _check_labels(frame: pd.DataFrame, spec, source: Source) -> None:
    """Predictions and gold labels of a classification task must be its label names or codes."""
    if spec.task_type == "regression":
        return
    allowed = {*spec.label_names, *map(str, range(len(spec.label_names))), INVALID}
    for column in (PREDICTION, LABEL):
        if column not in frame.columns:
            continue
        keys = {label_key(v) for v in pd.unique(frame[column].dropna())}
        unknown = sorted(keys - allowed)
        if unknown:
            raise SeedscopeError(f"{source.path}: {column} value(s) {', '.join(unknown[:3])} are not labels of "
                                 f"{spec.name} ({', '.join(spec.label_names)}, or their codes 0…"
                                 f"{len(spec.label_names) - 1})")


def _id_column(columns: list[str], options: ReadOptions, path: Path) -> str:
    column = pick_column(columns, options.id_column, ID_NAMES, path)
    if column is None:
        raise missing_column("example-id", ID_NAMES, "id_column / --id-column", columns, path)
    return column


def load_table(path: Path, fmt: str, options: ReadOptions) -> tuple[pd.DataFrame, str]:
    """All columns of the file plus :data:`LINE`; ids are read as text so ``007`` stays ``007``.

    Empty rows of a CSV / TSV (a spreadsheet's trailing ``,,,``) are dropped after numbering, so
    every message still names the right line.
    """
    check_input(path)
    if fmt not in SEPARATORS and fmt != "parquet":
        return _load_json(path)
    if fmt == "parquet":
        try:
            raw = pd.read_parquet(path)
        except PermissionError as error:
            raise cannot_read(path, error) from None
        except Exception as error:  # pyarrow raises several types for a file that is not Parquet
            raise damaged_parquet(path, error) from None
        unit, first_line = "row", 1
    else:
        dialect = sniff(path, fmt)
        raw = _load_delimited(path, dialect, options, fmt)
        if dialect.note:
            warnings.warn(dialect.note, ReadingChoiceWarning, stacklevel=2)
        unit, first_line = "line", 2
    raw[LINE] = range(first_line, first_line + len(raw))
    raw = raw[raw.drop(columns=LINE).notna().any(axis=1)].reset_index(drop=True)
    if fmt in SEPARATORS and not raw.empty:
        check_last_line(path, raw, dialect.sep)
    if raw.empty:
        raise SeedscopeError(f"{path} has column names but no rows")
    return raw, unit


def read_delimited(path: Path, fmt: str, **options) -> pd.DataFrame:
    """``pd.read_csv`` with the file's sniffed delimiter and decimal mark (a byte-order mark dropped)."""
    dialect = sniff(path, fmt)
    return pd.read_csv(path, sep=dialect.sep, decimal=dialect.decimal, encoding="utf-8-sig", **options)


def _load_delimited(path: Path, dialect: Dialect, options: ReadOptions, fmt: str) -> pd.DataFrame:
    try:
        # utf-8-sig drops a spreadsheet's byte-order mark; CR-only and CRLF line ends are read as they are
        header = list(pd.read_csv(path, sep=dialect.sep, nrows=0, encoding="utf-8-sig").columns)
        id_column = pick_column(header, options.id_column, ID_NAMES, path)  # read as text, so 007 stays 007
        return pd.read_csv(path, sep=dialect.sep, decimal=dialect.decimal, dtype={id_column: str} if id_column else None,
                           encoding="utf-8-sig", skip_blank_lines=False)
    except pd.errors.EmptyDataError:
        raise SeedscopeError(f"{path} is empty") from None
    except pd.errors.ParserError as error:
        raise SeedscopeError(f"{path} is not a well-formed {fmt.upper()} file ({error})") from None
    except UnicodeDecodeError as error:
        raise not_utf8(path, error) from None
    except OSError as error:
        raise cannot_read(path, error) from None


def _tail_rows(path: Path, sep: str) -> list[list[str]] | None:
    """The fields of the whole lines in the file's last 64 KiB, last line last, when that line has no line end."""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - TAIL_BYTES))
        tail = handle.read()
    if not tail or tail.endswith((b"\n", b"\r")):
        return None
    lines = tail.decode("utf-8", errors="replace").splitlines()
    return list(csv.reader(lines[1:] or lines, delimiter=sep))  # the first is the header, or cut by the seek


def unterminated_last_line(path: Path, sep: str) -> bool:
    """True when the file's last line has no line end (where a file cut short ends)."""
    return _tail_rows(path, sep) is not None


def check_last_line(path: Path, raw: pd.DataFrame, sep: str) -> None:
    """A last line without a line end that is short of fields, brings a class no other line has, or holds a number
    written shorter than every other of its column is a file cut short: refused with its line, never read."""
    rows = _tail_rows(path, sep)
    if not rows:
        return
    fields, earlier_rows = rows[-1], [row for row in rows[:-1] if len(row) == len(rows[-1])]
    columns = [c for c in raw.columns if c != LINE]
    line = int(raw[LINE].iloc[-1])
    if len(fields) < len(columns):
        raise SeedscopeError(f"{path} line {line} has {len(fields)} of the {len(columns)} fields and no line end: "
                             "the file looks cut short")
    if len(earlier_rows) >= 4:
        for column, text in zip(columns, fields):
            others = [len(row[columns.index(column)]) for row in earlier_rows]
            if pd.api.types.is_numeric_dtype(raw[column]) and text.strip() and len(text) < min(others):
                raise SeedscopeError(f"{path} line {line}: {column} {text!r} is written shorter than every other value "
                                     "of its column, and the line has no line end: the file looks cut short")
    if len(raw) < 5:
        return
    earlier = raw.iloc[:-1]
    for column in columns:
        value = raw[column].iloc[-1]
        if pd.api.types.is_numeric_dtype(raw[column]) or pd.isna(value):
            continue
        others = earlier[column].dropna()
        if others.nunique() <= len(others) / 2 and value not in set(others):
            raise SeedscopeError(f"{path} line {line}: {column} {value!r} appears on no other line, and the line has no "
                                 "line end: the file looks cut short")


def _load_json(path: Path) -> tuple[pd.DataFrame, str]:
    """JSON lines (one object a line), or one JSON array of objects."""
    numbered, unit = json_records(path)
    raw = pd.DataFrame.from_records([record for _, record in numbered])
    raw[LINE] = [number for number, _ in numbered]
    return raw, unit


def _probabilities(raw: pd.DataFrame, spec, source: Source) -> pd.DataFrame | None:
    """``prob_<class>`` columns from the file's probability columns, or None when it has none."""
    columns = [c for c in raw.columns if c != LINE]
    if spec is None:
        prefixed = [c for c in columns if str(c).startswith(PROB_PREFIX)]
        if prefixed:
            return raw[prefixed]
        listed = pick_column(columns, None, PROB_LIST_NAMES, source.path)
        return _expand(raw, listed, source) if listed else None
    if isinstance(spec, dict):
        for column in spec:
            pick_column(columns, column, (), source.path)
        return raw[list(spec)].rename(columns={c: f"{PROB_PREFIX}{cls}" for c, cls in spec.items()})
    if spec in columns:
        return _expand(raw, spec, source)
    prefixed = [c for c in columns if str(c).startswith(spec)]
    if not prefixed:
        raise SeedscopeError(
            f"{source.path}: no probability column {spec!r} and no column starting with it "
            f"(available: {', '.join(map(str, columns))})"
        )
    return raw[prefixed].rename(columns=lambda c: f"{PROB_PREFIX}{c[len(spec):]}")


def _expand(raw: pd.DataFrame, column: str, source: Source) -> pd.DataFrame:
    """A column of probability lists (JSON text in CSV) as ``prob_0`` … ``prob_{C-1}``."""
    rows = []
    for line, value in zip(raw[LINE], raw[column]):
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                raise SeedscopeError(f"{source.where(line)}: {column} {value!r} is not a list of numbers") from None
        if not isinstance(value, (list, tuple, np.ndarray)):
            raise SeedscopeError(f"{source.where(line)}: {column} {value!r} is not a list of numbers")
        rows.append(list(value))
        if len(rows[-1]) != len(rows[0]):
            raise SeedscopeError(
                f"{source.where(line)}: {column} has {len(rows[-1])} probabilities, the first row {len(rows[0])}"
            )
    width = len(rows[0])
    return pd.DataFrame(rows, columns=[f"{PROB_PREFIX}{i}" for i in range(width)], index=raw.index)
