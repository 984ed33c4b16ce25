"""Verifying an experiment store: the catalog against SQLite's own check, every run's file against the catalog.

Each problem has a kind, and ``--resume`` repairs every kind (:data:`REPAIRS`): a finished run
whose file is missing, unreadable, short, altered or another run's, or whose catalog row lacks
its checksum, is redone (a sampled run's sample file too, against the checksum its prediction
file keeps), and so is a run whose JSON cells (seeds, timings, metrics,
environment) cannot be read; a file left by a
run that never finished goes; temporary files of interrupted writes go; files that no run of
the plan owns are moved aside to ``DIR/orphans/``. A damaged catalog cannot be repaired
automatically: it is reported, and the prediction files stay.
"""

from __future__ import annotations

import io
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.parquet as pq

from seedscope.errors import SeedscopeError
from seedscope.predictions import RUN
from seedscope.store.catalog import CATALOG
from seedscope.store.files import (
    PREDICTIONS,
    SAMPLES,
    SAMPLES_ROWS_KEY,
    SAMPLES_SHA256_KEY,
    SUFFIX,
    TEMPORARY_GLOB,
    file_name,
    is_sha256,
    sha256,
)
from seedscope.store.locks import CatalogLocked
from seedscope.store.records import RESULTS, listing, read_record, record_path

if TYPE_CHECKING:
    from seedscope.store import ExperimentStore

#: what ``--resume`` does about each kind of problem
REPAIRS = {
    "catalog": "none: `seedscope verify DIR --rebuild` rebuilds it from plan.json and the result records (or restore "
               "catalog.sqlite from a backup); the prediction files are kept",
    "record": "the run is redone (its record set aside as an attempt)",
    "entry": "the run is redone (its seeds written again from the plan)",
    "unrecorded": "the run is redone",
    "missing": "the run is redone",
    "unreadable": "the run is redone",
    "short": "the run is redone",
    "altered": "the run is redone",
    "wrong-run": "the run is redone",
    "unfinished": "the file is removed and the run redone",
    "temporary": "the file is removed",
    "orphan": "the file is moved to orphans/",
}
#: kinds after which a done run must be redone
REDO = ("entry", "unrecorded", "missing", "unreadable", "short", "altered", "wrong-run", "record")
#: the temporary catalog a killed ``create`` leaves beside where catalog.sqlite would be
TEMPORARY_CATALOG_GLOB = f".{CATALOG}.*.tmp"


@dataclass(frozen=True)
class Problem:
    """One integrity problem: its kind (a key of :data:`REPAIRS`), a sentence, and where."""

    kind: str
    message: str
    path: Path | None = None
    run_id: str | None = None

    @property
    def repair(self) -> str:
        return REPAIRS[self.kind]


def verify(store: "ExperimentStore", *, full: bool = True, contents: bool = True) -> list[Problem]:
    """Every integrity problem of ``store``; ``full`` runs SQLite's full ``integrity_check`` (else ``quick_check``).

    A finished run's file must exist, be readable Parquet, hold the catalog's number of rows and
    have the SHA-256 recorded when the run finished (stores written before checksums were
    recorded are checked by the run column their files carry instead). Every run's JSON cells
    must parse, and the plan too. A damaged catalog is one problem, never an exception; a catalog another
    process holds locked is :class:`~seedscope.store.locks.CatalogLocked` (it says nothing of damage).
    Without ``contents`` neither the files nor the catalog's cells are read: each finished run's file must be
    there and its checksum and row count recorded (what a glance at ten thousand runs can afford in a fraction of
    a second; ``seedscope verify`` reads them all).
    """
    try:
        damage = store.catalog.integrity(full=full)
        if not damage:
            if contents:
                store.catalog.check_readable()
                store.catalog.plan()
            runs = store.catalog.checksums()
            recorded = store.catalog.has_checksums()
            entries = store.catalog.damaged_cells() if contents else []
    except CatalogLocked:
        raise  # another process is writing: nothing to say about damage
    except SeedscopeError as error:
        return [Problem("catalog", str(error), store.path / CATALOG)] + temporaries(store.path)
    if damage:
        return [Problem("catalog", f"the catalog {store.path / CATALOG} is damaged: {'; '.join(damage[:3])}",
                        store.path / CATALOG)] + temporaries(store.path)
    problems = [Problem("entry", f"run {run_id}'s {column} in the catalog {fault}", store.path / CATALOG, run_id)
                for run_id, column, fault in entries]
    listed = {folder: _parquet_files(store.path / folder) for folder in (PREDICTIONS, SAMPLES)}
    waiting = listing(store.path).results & {run_id for run_id, (status, _, _) in runs.items()
                                             if status not in ("done", "failed")}
    problems += _waiting_records(store.path, waiting)
    for run_id, (status, n_predictions, digest) in runs.items():
        present = file_name(run_id) in listed[PREDICTIONS]
        if status == "done" and contents:
            problems += _check_file(store.prediction_path(run_id), run_id, n_predictions, digest, recorded)
        elif status == "done":
            problems += _check_record(store, run_id, n_predictions, digest, recorded, present)
        elif present and run_id not in waiting:  # a result record waiting to be taken in owns it
            path = store.prediction_path(run_id)
            problems.append(Problem("unfinished", f"{path} exists but run {run_id} is {status} (a write that did not "
                                    "finish)", path, run_id))
    for folder in (PREDICTIONS, SAMPLES):
        for name in sorted(listed[folder]):
            run_id = name[: -len(SUFFIX)]
            if run_id not in runs:
                problems.append(Problem("orphan", f"{store.path / folder / name} belongs to no run of the plan",
                                        store.path / folder / name))
            elif folder == SAMPLES and runs[run_id][0] != "done":
                path = store.path / folder / name
                problems.append(Problem("unfinished", f"{path} exists but run {run_id} is {runs[run_id][0]} "
                                        "(a write that did not finish)", path, run_id))
    return problems + temporaries(store.path)


def _parquet_files(folder: Path) -> set[str]:
    """The names of the Parquet files in ``folder`` (as ``*.parquet`` globs them), from one listing."""
    try:
        with os.scandir(folder) as entries:
            return {entry.name for entry in entries
                    if entry.name.endswith(SUFFIX) and not entry.name.startswith(".") and entry.is_file()}
    except (FileNotFoundError, NotADirectoryError):
        return set()


def _waiting_records(root: Path, waiting: set[str]) -> list[Problem]:
    """Result records of unfinished runs that cannot be taken in (unreadable, or naming files that are gone).

    Readable ones wait only for a command that may write the catalog."""
    found = []
    for run_id in sorted(waiting):
        path = record_path(root, run_id)
        record, fault = read_record(path, run_id)
        if record is not None and record["status"] == "done" and not (root / PREDICTIONS / f"{run_id}.parquet").is_file() \
                and not (root / RESULTS / str((record.get("staged") or {}).get("predictions"))).is_file():
            fault = f"{path} says run {run_id} is done, but its predictions were never placed and are gone"
        if fault:
            found.append(Problem("record", fault, path, run_id))
    return found


def temporaries(root: Path) -> list[Problem]:
    """Temporary files of interrupted writes: of prediction files and records, and of the catalog of a killed create."""
    found = [path for folder in (PREDICTIONS, SAMPLES, RESULTS) for path in sorted((root / folder).glob(TEMPORARY_GLOB))]
    found += sorted(root.glob(TEMPORARY_CATALOG_GLOB))
    return [Problem("temporary", f"{path} is a temporary file left by an interrupted write", path) for path in found]


def _check_file(path: Path, run_id: str, n_predictions, digest, recorded: bool) -> list[Problem]:
    """The problem of a done run's file; ``recorded``: the catalog keeps checksums (schema 2), so one is due."""
    if not path.is_file():
        return [Problem("missing", f"run {run_id} is done in the catalog but {path} is missing", path, run_id)]
    try:
        data = path.read_bytes()
    except OSError as error:  # no read permission, an I/O error
        return [Problem("unreadable", f"{path} cannot be read ({error.strerror or error})", path, run_id)]
    intact = recorded and is_sha256(digest) and isinstance(n_predictions, int) and sha256(data) == digest
    footer = _footer(data) if intact else None
    if footer is not None:
        # the very bytes the run wrote, so the footer is enough: the row count and the sample file's record
        if footer.num_rows != n_predictions:
            return [Problem("short", f"{path} holds {footer.num_rows} predictions, the catalog says {n_predictions}",
                            path, run_id)]
        return _check_samples(path.parent.parent / SAMPLES / path.name, run_id, footer.metadata or {})
    try:
        table = pq.read_table(io.BytesIO(data))
    except Exception as error:  # pyarrow raises several types for a damaged file
        return [Problem("unreadable", f"{path} cannot be read ({type(error).__name__}: {error})", path, run_id)]
    if digest is None and RUN in table.column_names and set(table.column(RUN).to_pylist()) != {run_id}:
        return [Problem("wrong-run", f"{path} holds the predictions of another run than {run_id}", path, run_id)]
    if n_predictions is not None and not isinstance(n_predictions, int):
        return []  # a damaged entry, reported as one: the file cannot be compared with it
    unrecorded = _unrecorded(path, run_id, n_predictions, digest, recorded)
    if unrecorded:
        return unrecorded
    if table.num_rows != n_predictions:
        return [Problem("short", f"{path} holds {table.num_rows} predictions, the catalog says {n_predictions}",
                        path, run_id)]
    if digest is not None and sha256(data) != digest:
        return [Problem("altered", f"{path} is not the file run {run_id} wrote (its SHA-256 differs from the one "
                        "recorded): it was changed or swapped", path, run_id)]
    return _check_samples(path.parent.parent / SAMPLES / path.name, run_id, table.schema.metadata or {})


def _footer(data: bytes):
    """The Parquet footer of ``data`` (None when it cannot be decoded: the full read then says why)."""
    try:
        return pq.ParquetFile(pa.BufferReader(data)).metadata
    except Exception:  # pyarrow raises several types for a damaged file
        return None


def _unrecorded(path: Path, run_id: str, n_predictions, digest, recorded: bool) -> list[Problem]:
    """The problem of a done run whose catalog row lacks what its file is checked against (row count, checksum)."""
    faults = [] if n_predictions is not None else ["no row count"]
    if recorded and not is_sha256(digest):
        faults.append("no checksum (NULL)" if digest is None else f"a checksum {digest!r} that is not a SHA-256")
    if not faults:
        return []
    return [Problem("unrecorded", f"run {run_id} is done but the catalog records {' and '.join(faults)} for "
                    f"{path}, so the file cannot be checked", path, run_id)]


def _check_record(store: "ExperimentStore", run_id: str, n_predictions, digest, recorded: bool,
                  present: bool) -> list[Problem]:
    """What :func:`_check_file` finds of a done run without reading its file: the file missing, its record lacking
    (the path is made only for a problem: 10,000 paths cost a twentieth of a second)."""
    if present and isinstance(n_predictions, int) and (is_sha256(digest) or not recorded):
        return []
    path = store.prediction_path(run_id)
    if not present:
        return [Problem("missing", f"run {run_id} is done in the catalog but {path} is missing", path, run_id)]
    if n_predictions is not None and not isinstance(n_predictions, int):
        return []  # a damaged entry, reported as one
    return _unrecorded(path, run_id, n_predictions, digest, recorded)


def _check_samples(path: Path, run_id: str, metadata: dict) -> list[Problem]:
    """The problem of a done run's sample file, against the checksum and row count its prediction file keeps."""
    if SAMPLES_SHA256_KEY not in metadata:
        return []
    if not path.is_file():
        return [Problem("missing", f"run {run_id} sampled its answers but {path} is missing", path, run_id)]
    try:
        data = path.read_bytes()
        rows = pq.read_metadata(io.BytesIO(data)).num_rows
    except OSError as error:
        return [Problem("unreadable", f"{path} cannot be read ({error.strerror or error})", path, run_id)]
    except Exception as error:  # pyarrow raises several types for a damaged file
        return [Problem("unreadable", f"{path} cannot be read ({type(error).__name__}: {error})", path, run_id)]
    if str(rows) != metadata.get(SAMPLES_ROWS_KEY, b"").decode():
        return [Problem("short", f"{path} holds {rows} samples, the run's prediction file says "
                        f"{metadata.get(SAMPLES_ROWS_KEY, b'?').decode()}", path, run_id)]
    if sha256(data) != metadata[SAMPLES_SHA256_KEY].decode():
        return [Problem("altered", f"{path} is not the sample file run {run_id} wrote (its SHA-256 differs from the "
                        "one its prediction file keeps): it was changed or swapped", path, run_id)]
    return []
