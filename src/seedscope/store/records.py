"""Result records: the files a run's execution leaves in ``DIR/results/``, which are the store's record.

Whoever runs a run — this process, a packing worker's parent, a SLURM job on another node, a Ray
task — writes what it found as files, never the catalog; the catalog is the index one writer
keeps of them (:mod:`seedscope.store.intake`) and can be rebuilt from them. In ``DIR/results/``:

``<run_id>.json``
    the run's **result record**: ``done`` (metrics, timings, environment, the SHA-256 and row count
    of ``predictions/<run_id>.parquet``) or ``failed`` (the error), the attempt that wrote it and
    when it started and finished. The first execution to finish claims the name with a hard link
    (:mod:`seedscope.store.commit`), so it is never replaced: a second execution of the same run is
    an attempt, never a second result.
``<run_id>.started.json``
    a start marker: an execution began (its attempt number and where it runs); it goes once the
    result is taken in.
``<run_id>.attempt-<token>.json``
    an execution that was not the result: one that finished after another had claimed the result,
    or a failed result set aside when ``--resume`` redoes its run.
``.<name>.<token>.tmp``
    a file being written (a record, or a run's Parquet file waiting to be placed).

Every file is written to a temporary name, fsynced and renamed (or linked) into place, so a
reader never sees half of one.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from seedscope.atomic import atomic_write_text
from seedscope.serialize import dumps

RESULTS = "results"
#: the version of the record format written here (a reader refuses newer ones)
RECORD_VERSION = 1
STARTED = ".started.json"
ATTEMPT = ".attempt-"
FINAL_STATUSES = ("done", "failed")
#: the keys every record holds
RECORD_KEYS = ("record", "run_id", "status", "attempt", "started_at", "finished_at", "metrics", "timings",
               "environment", "error", "n_predictions", "sha256")


def results_dir(root: Path) -> Path:
    return Path(root) / RESULTS


def record_path(root: Path, run_id: str) -> Path:
    return results_dir(root) / f"{run_id}.json"


def start_path(root: Path, run_id: str) -> Path:
    return results_dir(root) / f"{run_id}{STARTED}"


def attempt_path(root: Path, run_id: str) -> Path:
    return results_dir(root) / f"{run_id}{ATTEMPT}{secrets.token_hex(4)}.json"


def record_text(record: Mapping[str, Any]) -> str:
    """A record as the JSON text written to disk (NaN as null, keys sorted)."""
    return dumps(dict(record), sort_keys=True)


def check_record(value: Any, run_id: str | None = None, statuses: tuple[str, ...] = FINAL_STATUSES) -> str | None:
    """What is wrong with a record read from disk (None when it is one seedscope wrote, for ``run_id``, with one of
    ``statuses``: a result's, or ``("started",)`` for a start marker)."""
    if not isinstance(value, dict):
        return f"is a JSON {type(value).__name__}, not a record"
    missing = [key for key in RECORD_KEYS if key not in value]
    if missing:
        return f"lacks {', '.join(missing)}"
    if not isinstance(value["record"], int) or value["record"] > RECORD_VERSION:
        return f"is a record of version {value['record']!r}; this seedscope reads up to {RECORD_VERSION}"
    if run_id is not None and value["run_id"] != run_id:
        return f"is the record of run {value['run_id']!r}"
    if value["status"] not in statuses:
        return f"has the status {value['status']!r}"
    if isinstance(value["attempt"], bool) or not isinstance(value["attempt"], int) or value["attempt"] < 1:
        return f"has the attempt {value['attempt']!r}, not a count"
    if value["status"] == "done" and not (isinstance(value["n_predictions"], int) and isinstance(value["sha256"], str)):
        return "is done without the row count and checksum of its predictions"
    return None


def read_record(path: Path, run_id: str | None = None,
                statuses: tuple[str, ...] = FINAL_STATUSES) -> tuple[dict | None, str | None]:
    """A record and None, or None and a sentence saying why ``path`` holds none (see :func:`check_record`)."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None, f"{path} is missing"
    except OSError as error:
        return None, f"{path} cannot be read ({error.strerror or error})"
    except ValueError as error:
        return None, f"{path} is not JSON ({error})"
    fault = check_record(value, run_id, statuses)
    return (value, None) if fault is None else (None, f"{path} {fault}")


def write_start(root: Path, run_id: str, attempt: int, started_at: str, where: Mapping[str, Any] | None = None) -> None:
    """Say that an execution of ``run_id`` began (replacing an earlier attempt's marker)."""
    record = dict.fromkeys(RECORD_KEYS)
    record.update(record=RECORD_VERSION, run_id=run_id, status="started", attempt=attempt, started_at=started_at,
                  environment=dict(where or {}))
    atomic_write_text(start_path(root, run_id), record_text(record))


@dataclass
class Listing:
    """What ``DIR/results/`` holds, from one listing: run ids with a result record, with a start marker, and the
    attempt records and temporary files."""

    results: set[str] = field(default_factory=set)
    started: set[str] = field(default_factory=set)
    attempts: list[Path] = field(default_factory=list)
    temporaries: list[Path] = field(default_factory=list)


def listing(root: Path) -> Listing:
    """One scan of ``DIR/results/`` (nothing when the folder does not exist: a store written before records)."""
    found = Listing()
    folder = results_dir(root)
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return found
    for entry in entries:
        name = entry.name
        if name.startswith("."):
            if name.endswith(".tmp"):
                found.temporaries.append(folder / name)
        elif name.endswith(STARTED):
            found.started.add(name[: -len(STARTED)])
        elif ATTEMPT in name and name.endswith(".json"):
            found.attempts.append(folder / name)
        elif name.endswith(".json"):
            found.results.add(name[: -len(".json")])
    found.attempts.sort()
    found.temporaries.sort()
    return found


def temporary_run(path: Path) -> str | None:
    """The run id a temporary file of ``DIR/results/`` belongs to (``.<run_id>.<kind>.<token>.tmp``), if any."""
    name = path.name
    if not (name.startswith(".") and name.endswith(".tmp")):
        return None
    stem = name[1:].rsplit(".", 2)[0]  # drop ".<token>.tmp"
    for suffix in (".samples.parquet", ".parquet", STARTED, ".json"):
        if stem.endswith(suffix):
            return stem[: -len(suffix)]
    return None


def set_aside(root: Path, run_id: str) -> None:
    """The run is to be done again: its result record becomes an attempt record, its start marker goes."""
    path = record_path(root, run_id)
    if path.exists():
        os.replace(path, attempt_path(root, run_id))
    start_path(root, run_id).unlink(missing_ok=True)
