"""The store's prediction files: one Parquet table per finished run, written atomically.

The store keeps label *names* (what the dataset says), whatever the runner returned (integer
codes, as a model head produces, or names), so its files read the same as the task's data.
A prompted run's file also holds its prompts: ``query`` and ``continuations`` columns, and the
prefix every example shares once, in the file's metadata (:data:`PROMPT_PREFIX_KEY`).

A run that sampled several answers per prompt also has a sample table (:mod:`seedscope.samples`)
in ``samples/<run_id>.parquet``, written first; its SHA-256 and row count go into the prediction
file's metadata (:data:`SAMPLES_SHA256_KEY`, :data:`SAMPLES_ROWS_KEY`), whose own checksum the
catalog keeps, so one recorded checksum vouches for both files.
"""

from __future__ import annotations

import hashlib
import io
from pathlib import Path
from typing import Mapping

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from seedscope.errors import SeedscopeError
from seedscope.predictions import INVALID, LABEL, PREDICTION, PROB_PREFIX, label_key, prob_columns
from seedscope.tasks import find_task

PREDICTIONS = "predictions"
SUFFIX = ".parquet"
#: the Parquet metadata key of a prompted run's shared prompt prefix
PROMPT_PREFIX_KEY = b"seedscope.prompt_prefix"
SAMPLES = "samples"
#: the prediction file's metadata keys of its run's sample file: SHA-256 and number of rows
SAMPLES_SHA256_KEY = b"seedscope.samples_sha256"
SAMPLES_ROWS_KEY = b"seedscope.samples_rows"
#: from this many bytes on a prediction file is decoded on every core (below, threads cost more than they save)
THREADED_READ = 1 << 20
#: prefix of the temporary files an interrupted write may leave (see :mod:`seedscope.atomic`)
TEMPORARY_GLOB = ".*.tmp"


def prediction_path(root: Path, run_id: str) -> Path:
    return Path(root) / PREDICTIONS / file_name(run_id)


def file_name(run_id: str) -> str:
    """The name of a run's prediction (and sample) file."""
    return f"{run_id}{SUFFIX}"


def samples_path(root: Path, run_id: str) -> Path:
    return Path(root) / SAMPLES / file_name(run_id)


def parquet_bytes(table: pd.DataFrame, prompt_prefix: str | None = None,
                  metadata: Mapping[bytes, str] | None = None) -> bytes:
    """``table`` as the bytes of a Parquet file (written to disk by :mod:`seedscope.store.commit`).

    ``prompt_prefix`` goes into the file's metadata, so the file alone holds what was scored, and
    so do the ``metadata`` given (the run's sample file's checksum).
    """
    arrow = pa.Table.from_pandas(table, preserve_index=False)
    extra = dict(metadata or {})
    if prompt_prefix is not None:
        extra[PROMPT_PREFIX_KEY] = prompt_prefix
    if extra:
        arrow = arrow.replace_schema_metadata({**(arrow.schema.metadata or {}),
                                               **{key: value.encode("utf-8") for key, value in extra.items()}})
    sink = io.BytesIO()
    pq.write_table(arrow, sink)
    return sink.getvalue()


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


_HEX_DIGITS = frozenset("0123456789abcdef")


def is_sha256(value) -> bool:
    """Whether ``value`` is a checksum as :func:`sha256` writes it (64 lowercase hex digits)."""
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX_DIGITS


def read_table(path: Path, run_id: str, columns: list[str] | None = None, *, checksum: str | None = None) -> pd.DataFrame:
    """A done run's predictions, or a sentence saying why they cannot be had.

    With ``checksum`` (recorded when the run finished) the bytes read are checked first, so a
    changed or swapped file is refused rather than analysed under another run's name.
    """
    return read_arrow(path, run_id, columns, checksum=checksum).to_pandas()


def read_arrow(path: Path, run_id: str, columns: list[str] | None = None, *, checksum: str | None = None) -> pa.Table:
    """:func:`read_table` as an Arrow table, with the file's metadata (a prompted run's prefix)."""
    if not path.is_file():
        raise SeedscopeError(f"run {run_id} is done in the catalog but {path} is missing (rerun with --resume)")
    try:
        data = path.read_bytes()
    except OSError as error:  # no read permission, an I/O error
        raise SeedscopeError(f"{path} cannot be read ({error.strerror or error}); `seedscope verify "
                             f"{path.parent.parent}` lists every problem, and --resume redoes such runs") from error
    if checksum is not None and sha256(data) != checksum:
        raise SeedscopeError(
            f"{path} is not the file run {run_id} wrote (its SHA-256 differs from the one recorded); it was changed "
            f"or swapped — `seedscope verify {path.parent.parent}` lists every problem, and --resume redoes such runs"
        )
    try:  # ParquetFile, not read_table (a dataset per call): a tenth of the time for a run's small file
        return pq.ParquetFile(pa.BufferReader(data)).read(columns=columns, use_threads=len(data) > THREADED_READ)
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise SeedscopeError(f"{path} cannot be read ({type(error).__name__}: {error})") from error


def with_label_names(table: pd.DataFrame, task: str) -> pd.DataFrame:
    """Predictions, labels and ``prob_<code>`` columns of a registry task as label names.

    Values that already are names stay, and so does ``invalid`` (a prompted model's answer that
    names no label); any other value is an error. Tasks the registry does not know are kept as they are.
    """
    spec = find_task(task)
    if spec is None or spec.task_type == "regression" or not spec.label_names:
        return table
    names = list(spec.label_names)
    lookup = {**{str(i): name for i, name in enumerate(names)}, **{name: name for name in names}, INVALID: INVALID}

    def to_names(column: str) -> pd.Series:
        values = table[column]
        keys = {value: label_key(value) for value in pd.unique(values.dropna())}  # per distinct value: fast
        unknown = sorted({k for k in keys.values() if k not in lookup})
        if unknown:
            raise SeedscopeError(
                f"{column} value(s) {', '.join(unknown[:3])} are not labels of {spec.name} ({', '.join(names)})"
            )
        return values.map({value: lookup[key] for value, key in keys.items()})

    table = table.assign(**{PREDICTION: to_names(PREDICTION)})
    if LABEL in table.columns:
        table[LABEL] = to_names(LABEL)
    renames = {}
    for column in prob_columns(table):
        key = column[len(PROB_PREFIX):]
        if key not in lookup:
            raise SeedscopeError(f"probability column {column} names no class of {spec.name} ({', '.join(names)})")
        renames[column] = PROB_PREFIX + lookup[key]
    return table.rename(columns=renames)
