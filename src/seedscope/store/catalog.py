"""The store's SQLite catalog: the plan, one row per run (status, timings, metrics, environment, error).

Every method opens its own short connection under a lock, so one catalog object may be
shared by threads; a write is one ``BEGIN IMMEDIATE`` transaction with ``synchronous = FULL``.
A catalog another process holds locked is a :class:`~seedscope.store.locks.CatalogLocked`
error after a short wait, never a damaged catalog (see :mod:`seedscope.store.locks`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from contextlib import closing, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

from seedscope.atomic import atomic_path
from seedscope.errors import SeedscopeError
from seedscope.serialize import dumps
from seedscope.store.locks import READ_WAIT_S, WRITE_WAIT_S, is_locked, locked

CATALOG = "catalog.sqlite"
#: 2 added ``runs.sha256`` (a version-1 catalog gains the column at its next write)
SCHEMA_VERSION = 2
STATUSES = ("pending", "running", "done", "failed")

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE plan (id INTEGER PRIMARY KEY CHECK (id = 1), plan_json TEXT NOT NULL, plan_hash TEXT NOT NULL);
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    position INTEGER NOT NULL,
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    model_name TEXT NOT NULL,
    method TEXT NOT NULL,
    tag TEXT NOT NULL,
    seeds_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pending', 'running', 'done', 'failed')),
    attempts INTEGER NOT NULL DEFAULT 0,
    started_at TEXT,
    finished_at TEXT,
    duration_s REAL,
    timings_json TEXT,
    metrics_json TEXT,
    environment_json TEXT,
    error TEXT,
    n_predictions INTEGER,
    sha256 TEXT
);
"""
_RUN_KEYS = ("run_id", "task", "model", "method", "seeds")
#: a run row's JSON cells: each holds a JSON object (a NULL result cell, of a run not done, reads as {})
JSON_CELLS = ("seeds_json", "timings_json", "metrics_json", "environment_json")
#: a run row's number cells and what each may hold
NUMBER_CELLS = {"attempts": (int,), "duration_s": (int, float, type(None)), "n_predictions": (int, type(None))}
#: what a run row forgets when it is made pending again
_RESET = ("started_at", "finished_at", "duration_s", "timings_json", "metrics_json", "environment_json",
          "n_predictions", "error", "sha256")


def canonical(value: Any) -> str:
    """The plan's canonical JSON (sorted keys, no spaces): what :func:`plan_hash` hashes."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise SeedscopeError(f"the plan cannot be stored as JSON: {error}") from error


def plan_hash(plan: Mapping[str, Any]) -> str:
    """SHA-256 of the plan's canonical JSON: equal plans, equal hashes."""
    return hashlib.sha256(canonical(plan).encode("utf-8")).hexdigest()


def as_json(value: Any) -> str | None:
    """JSON text for a catalog column (NaN / infinity as null, so every reader can parse it)."""
    return None if value is None else dumps(value, indent=None, sort_keys=True)


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def parse_cell(column: str, text: Any) -> tuple[Any, str | None]:
    """A run's cell (a JSON cell as a dict), and what is wrong with it (None when sound; the value is then empty).

    Seeds must be integers and metrics numbers (or null), as seedscope writes them, and so must
    the number cells; a cell changed by hand or by a damaged disk is caught here rather than
    crashing a reader later.
    """
    if column in NUMBER_CELLS:
        sound = isinstance(text, NUMBER_CELLS[column]) and not isinstance(text, bool)
        return (text, None) if sound else (None, f"is {text!r}, not a number")
    if text is None:
        return {}, ("is NULL" if column == "seeds_json" else None)
    if not isinstance(text, str):
        return {}, f"holds a {type(text).__name__}, not JSON text"
    try:
        value = json.loads(text)
    except ValueError as error:
        return {}, f"is not JSON ({error})"
    if not isinstance(value, dict):
        return {}, f"is a JSON {type(value).__name__}, not an object"
    wanted = {"seeds_json": (int,), "metrics_json": (int, float, type(None))}.get(column)
    wrong = [key for key, item in value.items() if wanted and not isinstance(item, wanted)]
    if wrong:
        return {}, f"holds {wrong[0]!r}: {value[wrong[0]]!r}, not {'an integer' if column == 'seeds_json' else 'a number'}"
    return value, None


def check_plan(plan: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The plan's runs, after checking they carry what the catalog needs."""
    runs = plan.get("runs") if isinstance(plan, Mapping) else None
    if not isinstance(runs, list) or not runs:
        raise SeedscopeError("a plan must hold a non-empty list of runs under 'runs'")
    seen = set()
    for i, run in enumerate(runs):
        missing = [k for k in _RUN_KEYS if k not in run] if isinstance(run, Mapping) else list(_RUN_KEYS)
        if missing:
            raise SeedscopeError(f"plan run {i} lacks {', '.join(missing)}")
        if run["run_id"] in seen:
            raise SeedscopeError(f"the plan holds run id {run['run_id']} twice")
        seen.add(run["run_id"])
    return runs


class Catalog:
    """The SQLite file of one experiment directory.

    Every SQLite error (a damaged page, a file that is not a database) becomes one
    :class:`SeedscopeError` naming the file and what to do, never a traceback.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.RLock()

    @classmethod
    def write_new(cls, path: Path, plan: Mapping[str, Any]) -> "Catalog":
        """A new catalog for ``plan`` at ``path``, written atomically (a killed create leaves none)."""
        runs = check_plan(plan)
        digest = plan_hash(plan)
        with atomic_path(path) as tmp:
            with closing(sqlite3.connect(tmp)) as db:
                db.executescript(_SCHEMA)
                db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("schema_version", str(SCHEMA_VERSION)), ("created_at", now()), ("plan_hash", digest)],
                )
                db.execute("INSERT INTO plan VALUES (1, ?, ?)", (canonical(plan), digest))
                db.executemany(
                    "INSERT INTO runs (run_id, position, task, model, model_name, method, tag, seeds_json, status)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                    [
                        (str(r["run_id"]), i, str(r["task"]), str(r["model"]), str(r.get("model_name") or r["model"]),
                         str(r["method"]), str(r.get("tag") or ""), as_json(r["seeds"]))
                        for i, r in enumerate(runs)
                    ],
                )
                db.commit()
        return cls(path)

    def check_readable(self) -> None:
        """Refuse a catalog that is not one, lacks its tables or was written by a newer seedscope."""
        try:
            with self._connect() as db:
                version = int(db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchall()[0][0])
                tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
                damage = [row[0] for row in db.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as error:
            if is_locked(error):
                raise locked(self.path) from error
            raise SeedscopeError(f"{self.path} is not a readable seedscope catalog ({error}); {self._advice()}") from error
        except (IndexError, ValueError) as error:
            raise SeedscopeError(f"{self.path} is not a readable seedscope catalog ({error})") from error
        if version > SCHEMA_VERSION:
            raise SeedscopeError(
                f"{self.path.parent} was written with catalog schema {version}; this seedscope reads up to {SCHEMA_VERSION}"
            )
        missing = sorted({"plan", "runs"} - tables)
        if missing:
            raise SeedscopeError(f"{self.path} is not a readable seedscope catalog (no {' or '.join(missing)} table)")
        if damage != ["ok"]:
            raise SeedscopeError(f"the catalog {self.path} is damaged ({damage[0]}); {self._advice()}")

    # ---- plumbing ---------------------------------------------------------------------------

    @contextmanager
    def transaction(self, wait: float | None = None) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, waiting up to ``wait`` seconds for another writer (default a minute)."""
        wait = WRITE_WAIT_S if wait is None else wait
        with self._lock, self._damage_is_an_error(), self._connect(wait, isolation_level=None) as db:
            db.execute("PRAGMA synchronous = FULL")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock, self._damage_is_an_error(), self._connect() as db:
            return db.execute(sql, params).fetchall()

    @contextmanager
    def _damage_is_an_error(self) -> Iterator[None]:
        try:
            yield
        except sqlite3.DatabaseError as error:
            if is_locked(error):
                raise locked(self.path) from error
            raise SeedscopeError(f"the catalog {self.path} cannot be used ({error}); {self._advice()}") from error

    def _advice(self) -> str:
        return (f"`seedscope verify {self.path.parent}` tells what is damaged, and the prediction files of finished runs "
                "are still in its predictions/ folder")

    def integrity(self, full: bool = True) -> list[str]:
        """SQLite's own check of every page (``quick_check`` when not ``full``): [] when sound."""
        rows = self.query("PRAGMA integrity_check" if full else "PRAGMA quick_check")
        return [] if [r[0] for r in rows] == ["ok"] else [str(r[0]) for r in rows]

    def has_checksums(self) -> bool:
        """Whether the runs table has the ``sha256`` column (schema 2; older stores gain it when written)."""
        return "sha256" in {row[1] for row in self.query("PRAGMA table_info(runs)")}

    def _connect(self, wait: float = READ_WAIT_S, **options) -> closing:
        """A short-lived connection that waits ``wait`` seconds for another connection's write to end: a reader
        briefly (a commit takes milliseconds; longer is a lock held, said at once), a writer up to a minute."""
        return closing(sqlite3.connect(self.path, timeout=wait, **options))

    @staticmethod
    def _require(db: sqlite3.Connection, run_id: str) -> tuple:
        row = db.execute("SELECT task, started_at FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise SeedscopeError(f"run {run_id} is not part of this experiment's plan")
        return row

    # ---- plan -------------------------------------------------------------------------------

    def plan(self) -> dict[str, Any]:
        """The stored plan; a damaged one is an error naming the catalog (it cannot be repaired from elsewhere)."""
        rows = self.query("SELECT plan_json FROM plan")
        try:
            plan = json.loads(rows[0][0])
            check_plan(plan)
        except (IndexError, TypeError, ValueError) as error:
            raise SeedscopeError(f"the catalog {self.path} is damaged: its plan cannot be read ({error}); "
                                 "restore catalog.sqlite from a backup (the prediction files of finished runs are "
                                 "still in its predictions/ folder)") from error
        return plan

    def plan_hash(self) -> str:
        return self.query("SELECT plan_hash FROM plan")[0][0]

    def run_state(self, run_id: str) -> tuple[str, str | None, int]:
        """A run's task, start time and attempt count (an error when the plan has no such run)."""
        with self._lock, self._damage_is_an_error(), self._connect() as db:
            task, started = self._require(db, run_id)
            attempts = db.execute("SELECT attempts FROM runs WHERE run_id = ?", (run_id,)).fetchone()[0]
        return task, started, attempts if isinstance(attempts, int) and not isinstance(attempts, bool) else 0

    # ---- run states -------------------------------------------------------------------------

    def statuses(self) -> list[tuple[str, str, int | None]]:
        """(run_id, status, n_predictions) of every run, in plan order."""
        return self.query("SELECT run_id, status, n_predictions FROM runs ORDER BY position")

    def reset(self, run_ids: list[str]) -> None:
        """Make these runs pending again, forgetting their last attempt (not its count); their seeds are
        written again from the plan (which repairs a damaged ``seeds_json``), a count that is not one restarts."""
        seeds = {run["run_id"]: as_json(run["seeds"]) for run in self.plan()["runs"]}
        with self.transaction() as db:
            cleared = ", ".join(f"{column} = NULL" for column in _RESET)
            db.executemany(f"UPDATE runs SET status = 'pending', seeds_json = ?, {cleared}, attempts = CASE"
                           " WHEN typeof(attempts) = 'integer' THEN attempts ELSE 0 END WHERE run_id = ?",
                           [(seeds[r], r) for r in run_ids])

    def mark_running(self, run_id: str) -> None:
        """A run has started (its start time and attempt count are recorded)."""
        with self.transaction() as db:
            self._require(db, run_id)
            db.execute(
                "UPDATE runs SET status = 'running', started_at = ?, finished_at = NULL, error = NULL,"
                " attempts = attempts + 1 WHERE run_id = ?",
                (now(), run_id),
            )

    def add_checksums(self, digests: Mapping[str, str]) -> None:
        """Bring a schema-1 catalog to schema 2, recording ``digests`` (run_id → SHA-256 of its sound file).

        A done run left without a checksum is then a problem :func:`seedscope.store.integrity.verify` reports.
        """
        with self.transaction() as db:
            if "sha256" not in {row[1] for row in db.execute("PRAGMA table_info(runs)")}:
                db.execute("ALTER TABLE runs ADD COLUMN sha256 TEXT")
                db.executemany("UPDATE runs SET sha256 = ? WHERE run_id = ?", [(d, r) for r, d in digests.items()])
                db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION),))

    def checksums(self) -> dict[str, tuple[str, int | None, str | None]]:
        """run_id → (status, n_predictions, sha256 or None) of every run."""
        checksum = "sha256" if self.has_checksums() else "NULL"
        rows = self.query(f"SELECT run_id, status, n_predictions, {checksum} FROM runs ORDER BY position")
        return {run_id: (status, n, digest) for run_id, status, n, digest in rows}

    def cell(self, run_id: str, column: str, text: Any) -> Any:
        """A run's cell (a JSON cell as a dict), or an error naming the run, the cell and what repairs it."""
        value, fault = parse_cell(column, text)
        if fault is not None:
            raise SeedscopeError(
                f"run {run_id} is damaged in the catalog {self.path}: its {column} {fault}; `seedscope verify "
                f"{self.path.parent}` lists every problem, and rerunning its sweep with --resume redoes the run"
            )
        return value

    def damaged_cells(self) -> list[tuple[str, str, str]]:
        """(run_id, column, what is wrong) of every run's cell that cannot be read (see :func:`parse_cell`)."""
        columns = (*JSON_CELLS, *NUMBER_CELLS)
        rows = self.query(f"SELECT run_id, {', '.join(columns)} FROM runs ORDER BY position")
        found = []
        for run_id, *cells in rows:
            found += [(run_id, column, fault) for column, text in zip(columns, cells)
                      if (fault := parse_cell(column, text)[1]) is not None]
        return found

    def run_rows(self) -> list[tuple]:
        """Every run row in plan order (the columns :func:`seedscope.store.views.runs_frame` reads)."""
        return self.query(
            "SELECT run_id, task, model, model_name, method, tag, seeds_json, status, attempts, started_at,"
            " finished_at, duration_s, timings_json, metrics_json, n_predictions, error FROM runs ORDER BY position"
        )

    def run_states(self) -> list[tuple]:
        """(run_id, status, started_at, finished_at, duration_s, error, seeds_json) of every run in plan order: what a
        glance at a store needs (:func:`seedscope.store.views.run_states_frame`), without its JSON result cells."""
        return self.query("SELECT run_id, status, started_at, finished_at, duration_s, error, seeds_json FROM runs"
                          " ORDER BY position")

    def environments(self) -> list[tuple[str, str]]:
        """(run_id, environment JSON) of every done run that recorded one, in plan order."""
        return self.query(
            "SELECT run_id, environment_json FROM runs WHERE status = 'done' AND environment_json IS NOT NULL"
            " ORDER BY position"
        )
