"""Taking result records into the catalog, and rebuilding a lost or damaged catalog from them.

The catalog has one writer at a time: a sweep's driver as results arrive, or whichever command next
opens the store. :func:`take_in` reads the records waiting in ``DIR/results/`` (only those of runs the
catalog does not hold as finished, from one listing of the folder), rolls forward any placing a killed
execution left unfinished (:func:`seedscope.store.commit.place`) and updates their rows, all in one
catalog transaction: that transaction's write lock is the store's lock (``BEGIN IMMEDIATE``; another
writer waits, see :mod:`seedscope.store.locks`). Taking in is idempotent: a record taken in twice
changes nothing.

:func:`rebuild` makes a new catalog from ``DIR/plan.json`` and every record, so the files alone are the
experiment; the damaged catalog is kept beside it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from seedscope.errors import SeedscopeError
from seedscope.store.catalog import CATALOG, Catalog, as_json, check_plan
from seedscope.store.commit import place
from seedscope.store.records import FINAL_STATUSES, listing, read_record, record_path, start_path

if TYPE_CHECKING:
    from seedscope.store import ExperimentStore

#: the plan beside the catalog, written when the store is created: what a rebuilt catalog starts from
PLAN_FILE = "plan.json"
#: what a damaged catalog is renamed to when a new one is rebuilt (a number is added when taken)
DAMAGED = f"{CATALOG}.damaged"


@dataclass
class Intake:
    """What one :func:`take_in` changed: runs now running, runs now finished (run id → done / failed), and the
    records it could not use (one sentence each)."""

    started: list[str] = field(default_factory=list)
    finished: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def take_in(store: "ExperimentStore", wait: float | None = None) -> Intake:
    """Update the catalog from the records waiting in ``DIR/results/``, waiting up to ``wait`` seconds for another
    writer (default: a minute; :class:`~seedscope.store.locks.CatalogLocked` after that). Nothing new to take in: no write at all."""
    found = listing(store.path)
    intake = Intake()
    if not (found.results or found.started or found.attempts) or not _news(store, found):
        return intake
    if not store.catalog.has_checksums():
        store._record_checksums()  # a schema-1 catalog gains its checksum column before rows are finished
    waiting = {path.name for path in found.temporaries}
    with store.catalog.transaction(wait) as db:
        rows = {run_id: (status, attempts) for run_id, status, attempts
                in db.execute("SELECT run_id, status, attempts FROM runs")}
        open_runs = {run_id for run_id, (status, _) in rows.items() if status not in FINAL_STATUSES}
        records = []
        for run_id in sorted(found.results & open_runs):
            record, fault = read_record(record_path(store.path, run_id), run_id)
            fault = fault or (place(store.path, record, waiting) if record["status"] == "done" else None)
            if fault:
                intake.problems.append(fault)
                continue
            records.append(record)
        apply(db, records)
        intake.finished = {record["run_id"]: record["status"] for record in records}
        for run_id in sorted((found.started & open_runs) - set(intake.finished)):
            marker, fault = read_record(start_path(store.path, run_id), run_id, ("started",))
            if marker is not None and (rows[run_id][0] == "pending" or marker["attempt"] > _count(rows[run_id][1])):
                mark_started(db, marker)
                intake.started.append(run_id)
        attempts = [record for path in found.attempts if (record := read_record(path)[0]) is not None]
        db.executemany("UPDATE runs SET attempts = ? WHERE run_id = ? AND typeof(attempts) = 'integer'"
                       " AND attempts < ?", [(r["attempt"], r["run_id"], r["attempt"]) for r in attempts])
    for run_id in found.started & ((set(rows) - open_runs) | set(intake.finished)):  # the run is finished
        start_path(store.path, run_id).unlink(missing_ok=True)
    return intake


def _news(store: "ExperimentStore", found) -> bool:
    """Whether the listing holds anything the catalog lacks (read without a write lock): a record or start marker of
    an unfinished run, a start marker of a finished one (to remove), or an attempt counted higher than its run."""
    rows = {run_id: (status, attempts) for run_id, status, attempts
            in store.catalog.query("SELECT run_id, status, attempts FROM runs")}
    if any(run_id in rows for run_id in found.started):
        return True
    if any(rows.get(run_id, ("done",))[0] not in FINAL_STATUSES for run_id in found.results):
        return True
    for path in found.attempts:
        record = read_record(path)[0]
        if record is not None and record["run_id"] in rows and record["attempt"] > _count(rows[record["run_id"]][1]):
            return True
    return False


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def apply(db, records: Iterable[Mapping[str, Any]]) -> None:
    """Set each record's run row to what the record says (done or failed), in the open transaction ``db``."""
    db.executemany(
        "UPDATE runs SET status = ?, started_at = COALESCE(?, started_at), finished_at = ?, duration_s = ?,"
        " timings_json = ?, metrics_json = ?, environment_json = ?, error = ?, n_predictions = ?, sha256 = ?,"
        " attempts = CASE WHEN typeof(attempts) = 'integer' AND attempts > ? THEN attempts ELSE ? END WHERE run_id = ?",
        [(r["status"], r["started_at"], r["finished_at"], duration(r), as_json(r["timings"] or {}),
          as_json(r["metrics"]), as_json(r["environment"]), r["error"], r["n_predictions"], r["sha256"],
          r["attempt"], r["attempt"], r["run_id"]) for r in records],
    )


def mark_started(db, marker: Mapping[str, Any]) -> None:
    """A start marker's run is running, with its start time and attempt count."""
    db.execute("UPDATE runs SET status = 'running', started_at = ?, finished_at = NULL, error = NULL, attempts = ?"
               " WHERE run_id = ?", (marker["started_at"], marker["attempt"], marker["run_id"]))


def duration(record: Mapping[str, Any]) -> float | None:
    """A run's seconds: the runner's ``total_seconds``, else finish − start."""
    seconds = (record.get("timings") or {}).get("total_seconds")
    if seconds is None and record.get("started_at") and record.get("finished_at"):
        seconds = (datetime.fromisoformat(record["finished_at"]) - datetime.fromisoformat(record["started_at"])
                   ).total_seconds()
    return seconds


def read_plan(root: Path) -> dict[str, Any]:
    """The plan kept beside the catalog, or an error saying why it cannot be had."""
    path = Path(root) / PLAN_FILE
    if not path.is_file():
        raise SeedscopeError(f"{root} keeps no {PLAN_FILE} (it was written before seedscope kept one), so its catalog "
                             f"cannot be rebuilt; restore {CATALOG} from a backup")
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
        check_plan(plan)
    except (OSError, ValueError) as error:
        raise SeedscopeError(f"{path} cannot be read as a plan ({error}), so the catalog cannot be rebuilt") from error
    return plan


@dataclass(frozen=True)
class Rebuilt:
    """A rebuilt catalog: how many runs it holds by status, and where the catalog it replaced was kept."""

    counts: dict[str, int]
    kept: Path | None


def replace_catalog(root: Path) -> Path | None:
    """A new, empty catalog made from ``plan.json``; the catalog already there is renamed aside (its new path, else
    None). :meth:`ExperimentStore.rebuild` then takes every record in ``results/`` into it."""
    root = Path(root)
    plan = read_plan(root)
    kept = None
    catalog = root / CATALOG
    if catalog.exists():
        kept = root / DAMAGED
        number = 1
        while kept.exists():
            number += 1
            kept = root / f"{DAMAGED}-{number}"
        os.replace(catalog, kept)
    Catalog.write_new(catalog, plan)
    return kept
