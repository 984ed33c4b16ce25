"""The experiment store: one directory per sweep that survives being killed at any moment.

Layout::

    DIR/catalog.sqlite              plan, one row per run (status, timings, metrics, environment, error)
    DIR/predictions/<run_id>.parquet one prediction table per finished run

A finished run's Parquet file is written atomically (temporary file, fsync, rename) and only
then is its catalog row set to ``done`` in one transaction, so a run is either done with its
file or not done at all. ``create(..., resume=True)`` keeps the done runs whose file exists
and makes every other run pending again; nothing is duplicated, because a run's file name is
its run id and a redo replaces it. See docs/store.md for the schema.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import numbers
import threading
from contextlib import closing, contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np
import pandas as pd

from seedscope.atomic import atomic_path
from seedscope.errors import SeedscopeError
from seedscope.factors import FACTORS
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, PROB_PREFIX, RUN, prob_columns, validate_table
from seedscope.tasks import get_task

CATALOG = "catalog.sqlite"
PREDICTIONS = "predictions"
SCHEMA_VERSION = 1
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
    n_predictions INTEGER
);
"""
_RUN_KEYS = ("run_id", "task", "model", "method", "seeds")


def plan_hash(plan: Mapping[str, Any]) -> str:
    """SHA-256 of the plan's canonical JSON (sorted keys, no spaces): equal plans, equal hashes."""
    return hashlib.sha256(_canonical(plan).encode("utf-8")).hexdigest()


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise SeedscopeError(f"the plan cannot be stored as JSON: {error}") from error


def _json(value: Any) -> str | None:
    """JSON text for a catalog column; NaN / infinity become null so that every reader can parse it."""
    if value is None:
        return None
    return json.dumps(_finite(value), sort_keys=True, default=str)


def _finite(value: Any) -> Any:
    if isinstance(value, np.generic):  # numpy scalars (np.float32 metrics) as plain Python numbers
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, Mapping):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _check_plan(plan: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The plan's runs, after checking they carry what the catalog needs."""
    runs = plan.get("runs") if isinstance(plan, Mapping) else None
    if not isinstance(runs, list) or not runs:
        raise SeedscopeError("a plan must hold a non-empty list of runs under 'runs'")
    seen = set()
    for i, run in enumerate(runs):
        missing = [k for k in _RUN_KEYS if not isinstance(run, Mapping) or k not in run]
        if missing:
            raise SeedscopeError(f"plan run {i} lacks {', '.join(missing)}")
        if run["run_id"] in seen:
            raise SeedscopeError(f"the plan holds run id {run['run_id']} twice")
        seen.add(run["run_id"])
    return runs


class ExperimentStore:
    """A sweep's directory: SQLite catalog of runs plus one Parquet prediction file per run.

    Create one with :meth:`create`, reopen it with :meth:`open`. Every method opens its own
    short SQLite connection under a lock, so one store object may be shared by threads.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.RLock()

    # ---- creating and opening -------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path, plan: Mapping[str, Any], resume: bool = False) -> "ExperimentStore":
        """A new store for ``plan`` at ``path``, or the existing one when ``resume`` and the plan matches.

        Refused: a directory holding a different plan (always), the same plan without
        ``resume`` (it would be overwritten), a non-empty directory that is not a store.
        """
        path = Path(path)
        try:
            return cls._create(path, plan, resume)
        except OSError as error:  # a name too long, a read-only or missing parent: one sentence
            raise SeedscopeError(f"cannot create the experiment directory {path}: {error.strerror or error}") from error

    @classmethod
    def _create(cls, path: Path, plan: Mapping[str, Any], resume: bool) -> "ExperimentStore":
        runs = _check_plan(plan)
        digest = plan_hash(plan)
        if path.exists() and not path.is_dir():
            raise SeedscopeError(f"{path} is a file, not an experiment directory")
        if (path / CATALOG).is_file():
            store = cls.open(path)
            stored = store.plan_hash()
            if stored != digest:
                raise SeedscopeError(
                    f"{path} holds a different plan ({store._plan_difference(plan)}); "
                    "choose another output directory, or rerun with the original settings and --resume"
                )
            if not resume:
                raise SeedscopeError(f"{path} already holds this experiment; pass --resume to continue it")
            store._reset_unfinished()
            return store
        leftovers = [p for p in path.iterdir() if not (p.name == PREDICTIONS and p.is_dir() and not any(p.iterdir()))] \
            if path.is_dir() else []
        if leftovers:
            raise SeedscopeError(f"{path} is not empty and is not a seedscope experiment directory")
        with atomic_path(path / CATALOG) as tmp:  # a killed create leaves no half-made catalog
            with closing(sqlite3.connect(tmp)) as db:
                db.executescript(_SCHEMA)
                db.executemany(
                    "INSERT INTO meta VALUES (?, ?)",
                    [("schema_version", str(SCHEMA_VERSION)), ("created_at", _now()), ("plan_hash", digest)],
                )
                db.execute("INSERT INTO plan VALUES (1, ?, ?)", (_canonical(plan), digest))
                db.executemany(
                    "INSERT INTO runs (run_id, position, task, model, model_name, method, tag, seeds_json, status)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'pending')",
                    [
                        (str(r["run_id"]), i, str(r["task"]), str(r["model"]), str(r.get("model_name") or r["model"]),
                         str(r["method"]), str(r.get("tag") or ""), _json(r["seeds"]))
                        for i, r in enumerate(runs)
                    ],
                )
                db.commit()
        (path / PREDICTIONS).mkdir(exist_ok=True)
        return cls(path)

    @classmethod
    def open(cls, path: str | Path) -> "ExperimentStore":
        """An existing store; an error when ``path`` is not one or was written by a newer seedscope."""
        path = Path(path)
        if not cls.is_store(path):
            raise SeedscopeError(f"{path} is not a seedscope experiment directory (no {CATALOG})")
        store = cls(path)
        try:
            version = int(store._query("SELECT value FROM meta WHERE key = 'schema_version'")[0][0])
            tables = {row[0] for row in store._query("SELECT name FROM sqlite_master WHERE type = 'table'")}
        except (sqlite3.DatabaseError, IndexError, ValueError) as error:
            raise SeedscopeError(f"{path / CATALOG} is not a readable seedscope catalog ({error})") from error
        if version > SCHEMA_VERSION:
            raise SeedscopeError(
                f"{path} was written with catalog schema {version}; this seedscope reads up to {SCHEMA_VERSION}"
            )
        missing = sorted({"plan", "runs"} - tables)
        if missing:
            raise SeedscopeError(f"{path / CATALOG} is not a readable seedscope catalog (no {' or '.join(missing)} table)")
        return store

    @staticmethod
    def is_store(path: str | Path) -> bool:
        """Whether ``path`` is an experiment directory (for readers that accept stores and files)."""
        try:
            return (Path(path) / CATALOG).is_file()
        except OSError as error:  # e.g. a name longer than the file system allows
            raise SeedscopeError(f"{path} cannot be read ({error.strerror or error})") from error

    # ---- catalog plumbing -----------------------------------------------------------------

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock, self._connect(isolation_level=None) as db:
            db.execute("PRAGMA synchronous = FULL")
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")

    def _query(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock, self._connect() as db:
            return db.execute(sql, params).fetchall()

    def _connect(self, **options) -> closing:
        """A short-lived connection; waits up to a minute for another writer (another process) to finish."""
        return closing(sqlite3.connect(self.path / CATALOG, timeout=60, **options))

    @staticmethod
    def _require(db: sqlite3.Connection, run_id: str) -> tuple:
        row = db.execute("SELECT task, started_at FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        if row is None:
            raise SeedscopeError(f"run {run_id} is not part of this experiment's plan")
        return row

    def _task_of(self, run_id: str) -> str:
        with self._lock, self._connect() as db:
            return self._require(db, run_id)[0]

    def prediction_path(self, run_id: str) -> Path:
        return self.path / PREDICTIONS / f"{run_id}.parquet"

    # ---- plan -----------------------------------------------------------------------------

    def plan(self) -> dict[str, Any]:
        """The plan the store was created with."""
        return json.loads(self._query("SELECT plan_json FROM plan")[0][0])

    def plan_hash(self) -> str:
        return self._query("SELECT plan_hash FROM plan")[0][0]

    def _plan_difference(self, plan: Mapping[str, Any]) -> str:
        """A short description of how ``plan`` differs from the stored one."""
        stored = {r["run_id"]: r for r in self.plan()["runs"]}
        new = {r["run_id"]: r for r in plan["runs"]}
        added, removed = sorted(set(new) - set(stored)), sorted(set(stored) - set(new))
        if added or removed:
            parts = [f"{len(stored)} stored runs vs {len(new)} requested"]
            if added:
                parts.append(f"new run {added[0]}")
            if removed:
                parts.append(f"missing run {removed[0]}")
            return ", ".join(parts)
        for run_id, run in new.items():
            if _canonical(run) != _canonical(stored[run_id]):
                keys = sorted(k for k in set(run) | set(stored[run_id]) if run.get(k) != stored[run_id].get(k))
                return f"run {run_id} differs in {', '.join(keys)}"
        return "the plan's settings differ"

    # ---- run life cycle -------------------------------------------------------------------

    def _reset_unfinished(self) -> None:
        """Resume: keep done runs whose file exists; every other run becomes pending again.

        A file of a run that is not done (killed between the rename and the catalog row) goes,
        as :meth:`record_failure` removes it, so that the resumed store passes :meth:`check`.
        """
        with self._transaction() as db:
            for run_id, status in db.execute("SELECT run_id, status FROM runs").fetchall():
                if status == "done" and self.prediction_path(run_id).is_file():
                    continue
                self.prediction_path(run_id).unlink(missing_ok=True)
                db.execute(
                    "UPDATE runs SET status = 'pending', started_at = NULL, finished_at = NULL, duration_s = NULL,"
                    " timings_json = NULL, metrics_json = NULL, environment_json = NULL, n_predictions = NULL, error = NULL"
                    " WHERE run_id = ?",
                    (run_id,),
                )
        for leftover in (self.path / PREDICTIONS).glob(".*.tmp"):  # temp files of a killed write
            leftover.unlink(missing_ok=True)

    def pending_runs(self) -> list[dict[str, Any]]:
        """Plan entries of every run that is not done, in plan order (what an executor should run)."""
        not_done = {row[0] for row in self._query("SELECT run_id FROM runs WHERE status != 'done'")}
        return [run for run in self.plan()["runs"] if run["run_id"] in not_done]

    def mark_running(self, run_id: str) -> None:
        """A run has started (its start time and attempt count are recorded)."""
        with self._transaction() as db:
            self._require(db, run_id)
            db.execute(
                "UPDATE runs SET status = 'running', started_at = ?, finished_at = NULL, error = NULL,"
                " attempts = attempts + 1 WHERE run_id = ?",
                (_now(), run_id),
            )

    def record_success(
        self,
        run_id: str,
        predictions: pd.DataFrame,
        metrics: Mapping[str, Any],
        environment: Mapping[str, Any] | None = None,
        timings: Mapping[str, Any] | None = None,
    ) -> None:
        """Write the run's predictions (atomically), then mark it done in one catalog transaction."""
        task = self._task_of(run_id)
        table = _with_label_names(validate_table(predictions, f"predictions of run {run_id}").assign(**{RUN: run_id}), task)
        with atomic_path(self.prediction_path(run_id)) as tmp:
            table.to_parquet(tmp, index=False)
        self._finish(run_id, "done", timings, metrics=_json(dict(metrics)),
                     environment_json=_json(dict(environment or {})), n_predictions=len(table), error=None)

    def record_failure(self, run_id: str, error: str, timings: Mapping[str, Any] | None = None) -> None:
        """The run raised: keep its error text; its predictions file, if a killed attempt left one, goes."""
        self._finish(run_id, "failed", timings, error=str(error), metrics=None, environment_json=None,
                     n_predictions=None)
        self.prediction_path(run_id).unlink(missing_ok=True)

    def _finish(self, run_id: str, status: str, timings: Mapping[str, Any] | None, *, metrics, **columns) -> None:
        finished = _now()
        with self._transaction() as db:
            started = self._require(db, run_id)[1]
            duration = (timings or {}).get("total_seconds")
            if duration is None and started:
                duration = (datetime.fromisoformat(finished) - datetime.fromisoformat(started)).total_seconds()
            assignments = ", ".join(f"{name} = ?" for name in columns)
            db.execute(
                f"UPDATE runs SET status = ?, finished_at = ?, duration_s = ?, timings_json = ?, metrics_json = ?,"
                f" {assignments} WHERE run_id = ?",
                (status, finished, duration, _json(dict(timings or {})), metrics, *columns.values(), run_id),
            )

    # ---- reading --------------------------------------------------------------------------

    def runs(self) -> pd.DataFrame:
        """One row per planned run, in plan order.

        Columns: run_id, task, model, model_name, method, tag, seed (the common seed when all
        factors share one, else missing), one column per factor seed, status, attempts,
        started_at, finished_at, duration_s, primary_metric (name), primary_value, metrics,
        timings (dicts), n_predictions, error.
        """
        rows = self._query(
            "SELECT run_id, task, model, model_name, method, tag, seeds_json, status, attempts, started_at,"
            " finished_at, duration_s, timings_json, metrics_json, n_predictions, error FROM runs ORDER BY position"
        )
        records = []
        for (run_id, task, model, model_name, method, tag, seeds_json, status, attempts, started, finished,
             duration, timings_json, metrics_json, n_predictions, error) in rows:
            stored = json.loads(seeds_json)
            seeds = {f: stored[f] for f in FACTORS if f in stored} | stored  # factor order of DESIGN.md
            metrics = json.loads(metrics_json) if metrics_json else {}
            metric = _primary_metric(task)
            distinct = set(seeds.values())
            records.append({
                "run_id": run_id, "task": task, "model": model, "model_name": model_name, "method": method,
                "tag": tag, "seed": distinct.pop() if len(distinct) == 1 else None, **seeds,
                "status": status, "attempts": attempts, "started_at": started, "finished_at": finished,
                "duration_s": duration, "primary_metric": metric, "primary_value": metrics.get(metric),
                "metrics": metrics, "timings": json.loads(timings_json) if timings_json else {},
                "n_predictions": n_predictions, "error": error,
            })
        frame = pd.DataFrame.from_records(records)
        frame[["seed", "n_predictions"]] = frame[["seed", "n_predictions"]].astype("Int64")
        return frame

    def environment(self) -> pd.DataFrame:
        """The recorded environment of every done run (one row per run, nested keys joined with dots)."""
        rows = self._query(
            "SELECT run_id, environment_json FROM runs WHERE status = 'done' AND environment_json IS NOT NULL"
            " ORDER BY position"
        )
        if not rows:
            return pd.DataFrame({"run_id": pd.Series(dtype=str)})
        flat = pd.json_normalize([json.loads(env) for _, env in rows])
        flat.insert(0, "run_id", [run_id for run_id, _ in rows])
        return flat

    def predictions(self, task: str | None = None, model: str | None = None) -> pd.DataFrame:
        """The long prediction table of every done run, with ``task`` and ``model`` columns.

        ``run`` is the run's seed when its factors share one (so a plain sweep's runs read
        42, 52, …), else its run id; ``model`` is the model's short name, with ``-lora`` and
        ``-<tag>`` appended when they apply, so that each (task, model) group is one sweep.
        Labels and predictions are label names; probabilities are ``prob_<name>`` columns.
        """
        runs = self.runs()
        runs = runs[runs["status"] == "done"]
        if task is not None:
            wanted = {task, _canonical_task(task)}
            runs = runs[runs["task"].isin(wanted) | runs["task"].map(_canonical_task).isin(wanted)]
        runs = runs.assign(label=[_model_label(r.model_name, r.method, r.tag) for r in runs.itertuples()])
        if model is not None:
            runs = runs[(runs["model"] == model) | (runs["model_name"] == model) | (runs["label"] == model)]
        if runs.empty:
            raise SeedscopeError(f"{self.path} has no finished run" + _filter_text(task, model))
        frames = []
        for run in runs.itertuples():
            frame = _read_parquet(self.prediction_path(run.run_id), run.run_id).drop(columns=["task", "model"], errors="ignore")
            frame[RUN] = run.run_id if pd.isna(run.seed) else str(run.seed)
            frame.insert(0, "model", run.label)
            frame.insert(0, "task", run.task)
            frames.append(frame)
        return pd.concat(frames, ignore_index=True)

    # ---- integrity ------------------------------------------------------------------------

    def check(self) -> list[str]:
        """Integrity problems, one sentence each (empty when the store is sound)."""
        problems = []
        rows = self._query("SELECT run_id, status, n_predictions FROM runs ORDER BY position")
        known = {run_id for run_id, _, _ in rows}
        for run_id, status, n_predictions in rows:
            path = self.prediction_path(run_id)
            if status == "done":
                try:
                    n_rows = len(_read_parquet(path, run_id, columns=[EXAMPLE_ID]))
                except SeedscopeError as error:
                    problems.append(str(error))
                    continue
                if n_rows != n_predictions:
                    problems.append(f"{path} holds {n_rows} predictions, the catalog says {n_predictions}")
            elif path.is_file():
                problems.append(f"{path} exists but run {run_id} is {status} (a write that did not finish)")
        for path in sorted((self.path / PREDICTIONS).glob("*.parquet")):
            if path.stem not in known:
                problems.append(f"{path} belongs to no run of the plan")
        for path in sorted((self.path / PREDICTIONS).glob(".*.tmp")):
            problems.append(f"{path} is a temporary file left by an interrupted write")
        return problems


def _read_parquet(path: Path, run_id: str, columns: list[str] | None = None) -> pd.DataFrame:
    """A done run's predictions, or a sentence saying why they cannot be had."""
    if not path.is_file():
        raise SeedscopeError(f"run {run_id} is done in the catalog but {path} is missing (rerun with --resume)")
    try:
        return pd.read_parquet(path, columns=columns)
    except Exception as error:  # pyarrow raises several types for a damaged file
        raise SeedscopeError(f"{path} cannot be read ({type(error).__name__}: {error})") from error


def _canonical_task(name: str) -> str:
    try:
        return get_task(name).name
    except SeedscopeError:
        return name


def _primary_metric(task: str) -> str | None:
    try:
        return get_task(task).primary_metric
    except SeedscopeError:
        return None


def _model_label(model_name: str, method: str, tag: str) -> str:
    return model_name + ("" if method == "full" else f"-{method}") + (f"-{tag}" if tag else "")


def _filter_text(task: str | None, model: str | None) -> str:
    parts = [f"task {task}" if task else "", f"model {model}" if model else ""]
    return (" for " + " and ".join(p for p in parts if p)) if any(parts) else ""


def _class_key(value) -> str:
    """A label as text: codes 1, 1.0 and "1" read "1"; booleans read "True" / "False" (SuperGLUE's names)."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return str(bool(value))
    if isinstance(value, numbers.Integral) or (isinstance(value, numbers.Real) and float(value).is_integer()):
        return str(int(value))
    return str(value)


def _with_label_names(table: pd.DataFrame, task: str) -> pd.DataFrame:
    """Predictions, labels and ``prob_<code>`` columns of a registry task as label names.

    Runners may return integer codes (what a model head produces); the store keeps names so
    that its files read the same as the dataset. Values that already are names stay.
    """
    try:
        spec = get_task(task)
    except SeedscopeError:
        return table
    names = list(spec.label_names)
    if spec.task_type == "regression" or not names:
        return table
    lookup = {**{str(i): name for i, name in enumerate(names)}, **{name: name for name in names}}

    def to_names(column: str) -> pd.Series:
        values = table[column]
        keys = {value: _class_key(value) for value in pd.unique(values.dropna())}  # per distinct value: fast
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
