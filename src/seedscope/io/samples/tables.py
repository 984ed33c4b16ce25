"""Plain sample tables: a CSV / TSV / JSON lines / Parquet file with a ``sample`` and a ``correct`` column.

One rule tells them apart from prediction tables: a plain table with both columns holds several
sampled answers per item (:mod:`seedscope.samples`). A file without a ``run`` column is one run,
named after the file; several files are several runs (sampling seeds) of one system.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.io.common import LINE, ReadOptions, require_readable, run_names
from seedscope.io.detect import all_of_one_kind, common_format
from seedscope.io.results.run_scores import parquet_column_names, read_head
from seedscope.io.results.tabular import load_table
from seedscope.predictions import RUN
from seedscope.samples import CORRECT, SAMPLE, check_sample_table

PLAIN = ("csv", "tsv", "jsonl", "parquet")


def looks_like_samples(path: Path, fmt: str) -> bool:
    """True for a plain table whose columns include ``sample`` and ``correct``; a file whose head cannot be read is
    left to the reader of its format, which names what is wrong with it."""
    if path.is_dir() or fmt not in PLAIN:
        return False
    if fmt == "parquet":  # the footer names them: no row group is decoded
        return {SAMPLE, CORRECT} <= set(parquet_column_names(path))
    try:
        columns = {str(column) for column in read_head(path, fmt).columns}
    except (SeedscopeError, ValueError, OSError):
        return False
    return {SAMPLE, CORRECT} <= columns


def holds_sample_tables(paths: list[Path], format: str | None = None) -> bool:
    """True when every input is a sample table; a mix of sample tables and other inputs is refused."""
    for path in paths:
        require_readable(path)
    found = {path: not path.is_dir() and looks_like_samples(path, common_format([path], format)) for path in paths}
    return all_of_one_kind(found, "sampled answers (sample, correct)", "does not")


def read_sample_tables(paths: list[Path], format: str | None = None) -> pd.DataFrame:
    """One checked sample table from every file (a file without a ``run`` column is one run, named after it)."""
    names = run_names(paths)
    frames = []
    for path, name in zip(paths, names):
        raw, _ = load_table(path, common_format([path], format), ReadOptions())
        raw = raw.drop(columns=LINE)
        if RUN not in raw.columns:
            raw.insert(0, RUN, name)
        frames.append(check_sample_table(raw, str(path)))
    table = pd.concat(frames, ignore_index=True)
    return check_sample_table(table, ", ".join(str(p) for p in paths))
