"""Score tables: per-example scores of systems (``seedscope subsets``) and factor-study scores.

Both are plain tables (CSV, TSV, JSON lines or a JSON array of records, Parquet) read by the
same loader as prediction tables (:func:`seedscope.io.results.tabular.load_table`), so a file that one
command reads, every command reads the same way.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Sequence

import pandas as pd

from seedscope.errors import DuplicateRowsWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, as_ids, finite_numbers, pick_column, require_readable, run_names
from seedscope.io.detect import TABLE_SUFFIXES, normalise_format
from seedscope.io.results.tabular import FORMATS, ID_NAMES, load_table
from seedscope.io.validate import names_unreadable_files
from seedscope.notes import recorded
from seedscope.predictions import EXAMPLE_ID
from seedscope.store.catalog import CATALOG

#: column naming the system of a long score table
SYSTEM = "system"


def table_format(path: Path, given: str | None = None) -> str:
    """csv / tsv / jsonl / parquet: ``given``, or the file's suffix."""
    if given is not None:
        kind = normalise_format(given)
        if kind not in FORMATS:
            raise SeedscopeError(f"{path}: score files must be one of {', '.join(FORMATS)}, not {kind}")
        return kind
    suffix = path.suffix.lower()
    if suffix not in TABLE_SUFFIXES:
        raise SeedscopeError(
            f"cannot read {path.name}: score tables must be {', '.join(sorted(TABLE_SUFFIXES))} files "
            "(or pass --input-format csv, tsv, jsonl or parquet)"
        )
    return TABLE_SUFFIXES[suffix]


@names_unreadable_files
def read_score_table(path: str | os.PathLike, *, fmt: str | None = None) -> pd.DataFrame:
    """A factor study's long score table (``experiment``, a score column, one index column per factor).

    ``attrs`` carries the file (``source``) and each row's line (``lines``), so that the study's checks name them.

    Parameters
    ----------
    path : path
        A CSV, TSV, JSON lines or Parquet file.
    fmt : str, optional
        Default: from the extension.

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> from seedscope import read_score_table
    >>> import numpy as np, pandas as pd
    >>> rows = [{"experiment": "golden", "score": 0.8 + 0.01 * np.sin(i)} for i in range(20)] + [
    ...     {"experiment": "order", "order": i, "run": g, "score": 0.8 + 0.005 * np.cos(i * g)}
    ...     for g in range(1, 6) for i in range(1, 5)]  # 5 mitigation groups × 4 data orders
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "study.csv"
    >>> pd.DataFrame(rows).to_csv(path, index=False)
    >>> read_score_table(path).shape
    (40, 4)
    """
    path = Path(path)
    if path.is_dir():
        raise SeedscopeError(f"{path} is a folder but neither a score table nor an experiment directory (no {CATALOG})")
    if not path.exists():
        raise SeedscopeError(f"score table {path} does not exist")
    require_readable(path)
    raw, _ = load_table(path, table_format(path, fmt), ReadOptions())
    table = raw.drop(columns=LINE)
    table.attrs.update(source=str(path), lines=raw[LINE].tolist())
    return table


@names_unreadable_files
def read_system_scores(
    paths: Sequence[str | os.PathLike],
    *,
    id_column: str | None = None,
    system_column: str = SYSTEM,
    fmt: str | None = None,
    columns: Sequence[str] = (),
    numeric: Sequence[str] = (),
) -> pd.DataFrame:
    """One long score table (system, example_id, value columns) from per-example score files.

    A file with a ``system_column`` is a long table; any other file is one system named after
    the file. Each file must hold the value ``columns`` the score needs, those of them in ``numeric``
    finite numbers (checked per file, so a file that lacks one, or holds NaN, is named with the
    line rather than showing up later as missing scores). Ids equal as
    numbers are one id (``7``, ``7.0``); a line repeated verbatim counts once (a
    :class:`~seedscope.errors.DuplicateRowsWarning`, its text in ``attrs["notes"]``), two lines
    scoring one example differently are an error naming both.
    """
    paths = [Path(p) for p in paths]
    frames = []
    with recorded() as notes:
        for path, name in zip(paths, run_names(paths)):
            require_readable(path)
            if path.is_dir():
                raise SeedscopeError(f"{path} is a folder; pass the score files themselves")
            raw, _ = load_table(path, table_format(path, fmt), ReadOptions(id_column=id_column))
            present = [c for c in raw.columns if c != LINE]
            id_name = pick_column(present, id_column, ID_NAMES, path)
            if id_name is None:
                raise SeedscopeError(
                    f"{path}: found no example id column (looked for {', '.join(ID_NAMES)}); name it with --id-column"
                )
            lacking = [c for c in columns if c not in present]
            if lacking:
                raise SeedscopeError(
                    f"{path}: no column {', '.join(lacking)} for the score (available: {', '.join(map(str, present))}); "
                    "name the score's columns with --subset-score"
                )
            for column in numeric:
                finite_numbers(raw, column, path)
            frame = raw[present].rename(columns={id_name: EXAMPLE_ID})
            frame[EXAMPLE_ID] = as_ids(frame[EXAMPLE_ID])
            if system_column in frame.columns:
                if frame[system_column].isna().any():
                    raise SeedscopeError(f"{path}: the {system_column} column has empty cells")
                frame = frame.rename(columns={system_column: SYSTEM})
            else:
                frame[SYSTEM] = name
            frames.append(_without_repeats(frame.assign(**{LINE: raw[LINE]}), path))
    table = pd.concat(frames, ignore_index=True)
    table.attrs["notes"] = notes
    return table


def _without_repeats(frame: pd.DataFrame, path: Path) -> pd.DataFrame:
    """A system's example scored twice: once when the rows agree (with a note), else an error naming both lines."""
    keys = [SYSTEM, EXAMPLE_ID]
    repeated = frame.duplicated(keys, keep=False)
    if repeated.any():
        content = [c for c in frame.columns if c != LINE]
        for _, group in frame[repeated].astype(str).groupby(keys, sort=False):
            if len(group[content].drop_duplicates()) > 1:
                first, second = frame.loc[group.index[:2]].to_dict("records")
                raise SeedscopeError(f"{path} lines {first[LINE]} and {second[LINE]}: system {first[SYSTEM]} scores "
                                     f"example {first[EXAMPLE_ID]} twice, differently")
        exact = frame.astype(str).duplicated(content).to_numpy()
        lines = ", ".join(str(n) for n in frame.loc[exact, LINE].head(5))
        warnings.warn(f"{path}: {int(exact.sum())} repeated line(s) ({lines}) score an example as an earlier line "
                      "does: each example counted once", DuplicateRowsWarning, stacklevel=2)
        frame = frame[~exact]
    return frame.drop(columns=LINE)
