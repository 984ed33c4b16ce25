"""What every reader shares: the options, one source's rows, run naming and located errors.

A reader turns files into :class:`Source` objects, each a prediction table plus the line
(or row) every prediction came from, so that the checks in :mod:`seedscope.io.results.checks` can
name the file and line of a bad value instead of a position in a merged table.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.io.validate import check_input, load_json, read_text
from seedscope.predictions import normal_ids

#: private column: 1-based line (or row) of the prediction in its file
LINE = "_line"
#: extra columns a prediction table may carry beside the contract's columns
PASSTHROUGH_COLUMNS = ("task", "model", "text", "cluster", "answer")


@dataclass(frozen=True)
class ReadOptions:
    """The keyword arguments of :func:`seedscope.io.read_predictions`, handed to every reader."""

    run_column: str | None = None
    id_column: str | None = None
    prediction_column: str | None = None
    label_column: str | None = None
    cluster_column: str | None = None
    prob_columns: str | dict[str, str] | None = None
    task: str | None = None
    task_type: str | None = None
    data_dir: str | os.PathLike | None = None
    filter: str | None = None
    run_names: tuple[str, ...] | None = None
    runs_by: str | None = None
    metric: str | None = None
    epochs_as: str | None = None


@dataclass
class Source:
    """The predictions read from one file (or one run directory), before they are merged.

    ``unit`` says what :data:`LINE` counts ("line" for text files, "row" for Parquet,
    "record" for a JSON array); ``regression`` is True when the file's format says so; ``gaps``: run → why
    the reader left some of its examples out (said if the runs then cover different ids).
    """

    path: Path
    frame: pd.DataFrame
    unit: str = "line"
    regression: bool | None = None
    gaps: dict[str, str] = field(default_factory=dict)

    def where(self, line) -> str:
        """``<path> line <n>``: where a value sits, for an error message."""
        return f"{self.path} {self.unit} {int(line)}"


def require_readable(path: Path) -> None:
    """A path the user named must be a readable regular file or folder (:func:`seedscope.io.validate.check_input`)."""
    check_input(path)


def run_names(paths: list[Path], given: tuple[str, ...] | None = None, *, by_folder: bool = False) -> list[str]:
    """One run name per path: the file stem (or folder name), lengthened until names are unique.

    ``seed1/preds.csv`` and ``seed2/preds.csv`` share a stem, so they become ``seed1`` and
    ``seed2``. ``by_folder`` names files after their folder first (for formats whose file
    names never vary, such as ``predict_results_rte.txt``). Explicit ``given`` names win but
    must be one per path and distinct.
    """
    if given is not None:
        if len(given) != len(paths):
            raise SeedscopeError(f"{len(given)} run name(s) given for {len(paths)} input(s); give one per input")
        if len(set(given)) != len(given):
            raise SeedscopeError(f"run names must be distinct; got {', '.join(given)}")
        return [str(name) for name in given]
    absolute = [Path(os.path.abspath(p)) for p in paths]
    stems = [p.parent / p.stem if p.is_file() else p for p in absolute]
    folders = [p.parent if p.is_file() else p for p in absolute]
    def suffixes(bare: list[Path], start: int = 1) -> list[list[str]]:
        return [["/".join(b.parts[-depth:]) for b in bare] for depth in range(start, max(map(len, (b.parts for b in bare))) + 1)]

    if by_folder:
        candidates = suffixes(folders) + suffixes(stems)
    else:
        candidates = [[b.name for b in stems], [b.name for b in folders]] + suffixes(stems, start=2)
    for names in candidates:
        if len(set(names)) == len(names) and all(names):
            return names
    raise SeedscopeError(f"the same input is given twice: {', '.join(map(str, paths))}")


def run_folders(
    paths: list[Path], find_files: Callable[[Path], list[Path]], task_of: Callable[[Path], str], kind: str
) -> list[tuple[Path, list[Path]]]:
    """Each input with its files: a file is itself, a folder is one run holding one file per task."""
    units = []
    for path in paths:
        files = [path] if path.is_file() else find_files(path)
        if not files:
            raise SeedscopeError(f"{path} holds no {kind} files")
        seen: dict[str, Path] = {}
        for file in files:
            task = task_of(file)
            if task in seen:
                raise SeedscopeError(
                    f"{path} holds two {kind} files of task {task} ({seen[task]}, {file}); "
                    "pass one folder per run (e.g. out/seed*/) or the files themselves"
                )
            seen[task] = file
        units.append((path, files))
    return units


def not_utf8(path: Path, error: UnicodeDecodeError) -> SeedscopeError:
    """The error for a text input that is not UTF-8 (e.g. saved as UTF-16 or Latin-1)."""
    return SeedscopeError(f"{path} is not UTF-8 text (byte {error.start}: {error.reason}); save it as UTF-8")


def json_records(path: Path) -> tuple[list[tuple[int, dict]], str]:
    """(line number, object) pairs of a JSON-lines file, or (record number, object) of a JSON array.

    The unit ("line" / "record") says what the number counts; a malformed line, a value that
    is not an object and a file without records are errors naming the file and line.
    """
    text = read_text(path)
    if text.lstrip().startswith("["):
        numbered, unit = list(enumerate(load_json(path, text), start=1)), "record"
    else:
        numbered, unit = [], "line"
        for number, line in enumerate(text.splitlines(), start=1):
            if line.strip():
                try:
                    numbered.append((number, json.loads(line)))
                except json.JSONDecodeError as error:
                    raise SeedscopeError(f"{path} line {number}: not valid JSON ({error.msg})") from None
                except RecursionError:
                    raise SeedscopeError(f"{path} line {number}: the JSON is nested too deeply to read") from None
    for number, record in numbered:
        if not isinstance(record, dict):
            raise SeedscopeError(f"{path} {unit} {number}: expected a JSON object, found {type(record).__name__}")
    if not numbered:
        raise SeedscopeError(f"{path} holds no records")
    return numbered, unit


def pick_column(columns: list[str], given: str | None, candidates: tuple[str, ...], path: Path) -> str | None:
    """The column named ``given`` (must exist), else the first candidate present (case-insensitive)."""
    available = ", ".join(map(str, columns))
    if given is not None:
        if given in columns:
            return given
        raise SeedscopeError(f"{path}: no column {given!r} (available: {available})")
    lower = {str(c).lower(): c for c in columns}
    for name in candidates:
        if name in lower:
            return lower[name]
    return None


def missing_column(what: str, candidates: tuple[str, ...], option: str, columns: list[str], path: Path):
    """The error for a required column that auto-detection could not find."""
    return SeedscopeError(
        f"{path}: found no {what} column (looked for {', '.join(candidates)}; available: "
        f"{', '.join(map(str, columns))}); name it with {option}"
    )


#: a whole number written with a decimal point (``7.0``, ``-3.00``): the same id as ``7`` / ``-3``
_WHOLE_DECIMAL = re.compile(r"^\s*([+-]?\d+)\.0*\s*$")


def as_ids(values: pd.Series, *, numbers: bool = False) -> pd.Series:
    """Example ids as text, so 7, 7.0, "7" and "7.0" are one id across files (but "007" stays "007").

    With ``numbers`` (a Parquet file's typed column), whole numbers in a numeric column stay int64 instead, as
    alignment keeps them (:func:`~seedscope.predictions.normal_ids`); text formats keep reading text.
    """
    dtype = values.dtype
    if numbers and pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype):
        ids = normal_ids(values)
        if ids.dtype == np.int64:
            return ids
    if pd.api.types.is_integer_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
        return values.astype(str)
    if pd.api.types.is_float_dtype(dtype):
        whole = np.mod(values.to_numpy(), 1) == 0
        text = values.astype(object).where(~whole, values.where(whole, 0).astype(np.int64)).astype(str)
    else:  # text, or Python objects of mixed types (JSON): whole floats and "7.0" lose their ".0"
        text = values.map(_id_text).astype(str)
    return text.where(values.notna())  # a missing id stays missing (pandas 2.0 writes it as "nan" or "None")


def _id_text(value):
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, str):
        whole = _WHOLE_DECIMAL.match(value)
        return str(int(whole[1])) if whole else value
    return value


def scored_prediction(correct: bool, answer, target: str | None) -> str:
    """A framework's verdict on one answer as a class: the target when it scored correct, else the answer
    (``invalid`` when there is none, marked when it reads like the target but was scored wrong), so that
    ``prediction == label`` is exactly the framework's own correctness."""
    if correct:
        return target if target is not None else "correct"
    if answer is None:
        from seedscope.predictions import INVALID

        return INVALID
    answer = str(answer)
    return f"{answer} (scored incorrect)" if answer == target else answer


def finite_numbers(frame: pd.DataFrame, column: str, path: Path) -> pd.Series:
    """A score column of a table read from ``path`` as floats; an empty, non-numeric or infinite value is named with
    its line (the frame's :data:`LINE`)."""
    values = frame[column]
    numeric = pd.to_numeric(values, errors="coerce")
    bad = numeric.isna() | ~np.isfinite(numeric.fillna(0))
    if bad.any():
        position = int(np.flatnonzero(bad.to_numpy())[0])
        line = frame[LINE].iloc[position]
        value = values.iloc[position]
        shown = repr(value) if isinstance(value, str) else value
        what = "is missing (empty, NA or n/a)" if pd.isna(value) else f"{shown} is not a finite number"
        name = column if column == "score" else f"score {column}"
        raise SeedscopeError(f"{path} line {int(line)}: {name} {what}")
    return numeric.astype(float)
