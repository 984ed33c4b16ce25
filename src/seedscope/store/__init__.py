"""The experiment store: one directory per sweep that survives being killed at any moment.

Layout::

    DIR/plan.json                    the plan, as given to create()
    DIR/results/<run_id>.json        one result record per finished run (done or failed): the record
    DIR/predictions/<run_id>.parquet one prediction table per finished run
    DIR/samples/<run_id>.parquet     one sample table per finished run that sampled several answers
    DIR/catalog.sqlite               the index of all of it: plan, one row per run (status, timings, metrics …)

Whoever runs a run writes its files and its result record, never the catalog
(:mod:`~seedscope.store.commit`: staged, claimed by a hard link, placed), so a run is either finished
with its files or not finished at all, and a run executed twice has one result. The catalog has one
writer: the process that records a run here, or whichever command next opens the store, which takes
in the records waiting for it (:mod:`~seedscope.store.intake`); a lost catalog is rebuilt from the files.
``create(..., resume=True)`` keeps the done runs whose file is sound and makes every other run pending
again. See docs/reference/store.md for the schema.

:mod:`~seedscope.store.catalog` owns the SQLite file, :mod:`~seedscope.store.files` the
Parquet files, :mod:`~seedscope.store.records` the result records and :mod:`~seedscope.store.views`
the tables read from them; this class ties them into the life cycle of a run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Collection, Mapping

import pandas as pd

from seedscope.atomic import atomic_write_text
from seedscope.errors import SeedscopeError
from seedscope.store import views
from seedscope.store.catalog import CATALOG, STATUSES, Catalog, canonical, check_plan, plan_hash
from seedscope.store.commit import Commit, commit_failure, commit_success
from seedscope.store.files import PREDICTIONS, SAMPLES, prediction_path, samples_path, sha256
from seedscope.store.intake import PLAN_FILE, Intake, Rebuilt, apply, replace_catalog, take_in
from seedscope.store.integrity import REDO, Problem, temporaries, verify
from seedscope.store.locks import READ_WAIT_S, CatalogLocked
from seedscope.store.records import RESULTS, set_aside, temporary_run

__all__ = ["CATALOG", "PREDICTIONS", "STATUSES", "ExperimentStore", "Problem", "plan_hash"]
#: where ``--resume`` moves prediction files that no run of the plan owns
ORPHANS = "orphans"


class ExperimentStore:
    """A sweep's directory: SQLite catalog of runs plus one Parquet prediction file per run.

    Create one with :meth:`create`, reopen it with :meth:`open`. One store object may be shared
    by threads (the catalog opens a short connection per call, under a lock).

    Parameters
    ----------
    path : path
        The experiment directory.

    Returns
    -------
    ExperimentStore
        Use :meth:`create` or :meth:`open` rather than the constructor.

    Examples
    --------
    >>> import tempfile
    >>> from seedscope import ExperimentStore, SeedscopeError
    >>> folder = tempfile.mkdtemp()
    >>> ExperimentStore.is_store(folder)
    False
    >>> try:
    ...     ExperimentStore.open(folder)
    ... except SeedscopeError as error:
    ...     print("not a store:", "no catalog.sqlite" in str(error))
    not a store: True
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self.catalog = Catalog(self.path / CATALOG)

    # ---- creating and opening -------------------------------------------------------------

    @classmethod
    def create(cls, path: str | Path, plan: Mapping[str, Any], resume: bool = False,
               in_flight: Collection[str] = ()) -> "ExperimentStore":
        """A new store for ``plan`` at ``path``, or the existing one when ``resume`` and the plan matches.

        Refused: a directory holding a different plan (always), the same plan without
        ``resume`` (it would be overwritten), a non-empty directory that is not a store. On
        resume, the runs ``in_flight`` (a cluster job still has them) are left as they are.
        """
        path = Path(path)
        try:
            return cls._create(path, plan, resume, in_flight)
        except OSError as error:  # a name too long, a read-only or missing parent: one sentence
            raise SeedscopeError(f"cannot create the experiment directory {path}: {error.strerror or error}") from error

    @classmethod
    def _create(cls, path: Path, plan: Mapping[str, Any], resume: bool, in_flight: Collection[str]) -> "ExperimentStore":
        if path.exists() and not path.is_dir():
            raise SeedscopeError(f"{path} is a file, not an experiment directory")
        if resume:
            cls.check_resumable(path)
        if (path / CATALOG).is_file():
            store = cls.open(path, take_in=False)  # the plan is compared before anything is written
            if store.plan_hash() != plan_hash(plan):
                raise SeedscopeError(
                    f"{path} holds a different plan ({store._plan_difference(plan)}); "
                    "choose another output directory, or rerun with the original settings and --resume"
                )
            if not resume:
                raise SeedscopeError(f"{path} already holds this experiment; pass --resume to continue it")
            store._reset_unfinished(in_flight)
            return store
        if (path / PLAN_FILE).is_file() and any((path / RESULTS).glob("*.json")):
            raise SeedscopeError(f"{path} holds an experiment whose catalog is missing; `seedscope verify {path} "
                                 "--rebuild` rebuilds it from its plan.json and result records")
        half_made = {problem.path for problem in temporaries(path)} if path.is_dir() else set()
        half_made |= {path / PLAN_FILE}  # a create killed before its catalog was renamed into place
        leftovers = [p for p in path.iterdir() if p not in half_made
                     and not (p.name in (PREDICTIONS, RESULTS) and p.is_dir() and not any(p.iterdir()))
                     ] if path.is_dir() else []
        if leftovers:
            raise SeedscopeError(f"{path} is not empty and is not a seedscope experiment directory")
        for temporary in half_made:
            temporary.unlink(missing_ok=True)
        check_plan(plan)
        canonical(plan)  # refused before anything is written: a plan that JSON cannot hold
        path.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path / PLAN_FILE, json.dumps(plan, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        Catalog.write_new(path / CATALOG, plan)
        for folder in (PREDICTIONS, RESULTS):
            (path / folder).mkdir(exist_ok=True)
        return cls(path)

    @classmethod
    def open(cls, path: str | Path, *, take_in: bool = True) -> "ExperimentStore":
        """An existing store, with the results waiting in it taken in (``take_in``, where this user may write the
        catalog); an error when ``path`` is not one or was written by a newer seedscope."""
        path = Path(path)
        if not cls.is_store(path):
            if (path / PLAN_FILE).is_file():
                raise SeedscopeError(f"the catalog of {path} is missing ({CATALOG}); `seedscope verify {path} --rebuild` "
                                     "rebuilds it from its plan.json and result records")
            raise SeedscopeError(f"{path} is not a seedscope experiment directory (no {CATALOG})")
        store = cls(path)
        store.catalog.check_readable()
        if take_in and store.writable():
            try:  # a reader takes in what waits, unless another writer holds the catalog (it will take them in)
                store.take_in(wait=READ_WAIT_S)
            except CatalogLocked:
                pass
        return store

    @classmethod
    def rebuild(cls, path: str | Path) -> Rebuilt:
        """A new catalog for the store at ``path`` from its ``plan.json`` and result records (the old one kept aside)."""
        kept = replace_catalog(Path(path))
        store = cls(path)
        take_in(store)
        counts: dict[str, int] = {}
        for _, status, _ in store.catalog.statuses():
            counts[status] = counts.get(status, 0) + 1
        return Rebuilt(counts, kept)

    def writable(self) -> bool:
        """Whether this process may write the catalog (a store shared read-only is read as it is)."""
        return os.access(self.path / CATALOG, os.W_OK) and os.access(self.path, os.W_OK)

    def take_in(self, wait: float | None = None) -> Intake:
        """Take the result records that executions left in ``DIR/results/`` into the catalog (see :mod:`.intake`),
        waiting up to ``wait`` seconds for another writer."""
        return take_in(self, wait)

    @classmethod
    def check_resumable(cls, path: str | Path) -> None:
        """Refuse to resume a folder that holds no experiment: a mistyped ``--out`` would silently start a new one."""
        if not cls.is_store(path):
            state = "does not exist" if not Path(path).exists() else f"holds no experiment (no {CATALOG})"
            raise SeedscopeError(f"there is nothing to resume: {path} {state}; to start a new sweep there, run the same "
                                 "command without --resume")

    @staticmethod
    def is_store(path: str | Path) -> bool:
        """Whether ``path`` is an experiment directory (for readers that accept stores and files)."""
        try:
            return (Path(path) / CATALOG).is_file()
        except OSError as error:  # e.g. a name longer than the file system allows
            raise SeedscopeError(f"{path} cannot be read ({error.strerror or error})") from error

    def prediction_path(self, run_id: str) -> Path:
        return prediction_path(self.path, run_id)

    def samples_path(self, run_id: str) -> Path:
        """Where a sampled run's sample table lives (:mod:`seedscope.samples`)."""
        return samples_path(self.path, run_id)

    # ---- plan -----------------------------------------------------------------------------

    def plan(self) -> dict[str, Any]:
        """The plan the store was created with."""
        return self.catalog.plan()

    def plan_hash(self) -> str:
        return self.catalog.plan_hash()

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
            if canonical(run) != canonical(stored[run_id]):
                keys = sorted(k for k in set(run) | set(stored[run_id]) if run.get(k) != stored[run_id].get(k))
                return f"run {run_id} differs in {', '.join(keys)}"
        return "the plan's settings differ"

    # ---- run life cycle -------------------------------------------------------------------

    def _reset_unfinished(self, in_flight: Collection[str] = ()) -> None:
        """Resume: take in the waiting results, repair what :meth:`verify` finds, then make every run that is not
        done pending again — but the runs ``in_flight``, which a job still has.

        A done run keeps its file only when the file is sound (present, readable, as many rows
        as recorded, the recorded checksum); otherwise the run is redone, its result record set
        aside as an attempt. Files of runs that are not done and temporary files of killed writes
        go; files no run owns move to ``orphans/``.
        """
        self.take_in()
        problems = verify(self, full=False)
        broken = {p.run_id for p in problems if p.kind in REDO}
        redo = [run_id for run_id, status, _ in self.catalog.statuses()
                if (status != "done" or run_id in broken) and run_id not in in_flight]
        for run_id in redo:
            self.prediction_path(run_id).unlink(missing_ok=True)
            self.samples_path(run_id).unlink(missing_ok=True)
            set_aside(self.path, run_id)
        self.catalog.reset(redo)
        for problem in problems:
            if problem.kind == "temporary" and temporary_run(problem.path) not in in_flight:
                problem.path.unlink(missing_ok=True)
            elif problem.kind == "orphan":  # a sample file beside the prediction file of the same name
                folder = self.path / ORPHANS / ("" if problem.path.parent.name == PREDICTIONS else SAMPLES)
                folder.mkdir(parents=True, exist_ok=True)
                problem.path.replace(folder / problem.path.name)
        for folder in (PREDICTIONS, RESULTS):
            (self.path / folder).mkdir(exist_ok=True)

    def pending_runs(self) -> list[dict[str, Any]]:
        """Plan entries of every run that is not done, in plan order (what an executor should run)."""
        not_done = {run_id for run_id, status, _ in self.catalog.statuses() if status != "done"}
        return [run for run in self.plan()["runs"] if run["run_id"] in not_done]

    def mark_running(self, run_id: str) -> None:
        """A run has started (its start time and attempt count are recorded)."""
        self.catalog.mark_running(run_id)

    def record_success(
        self,
        run_id: str,
        predictions: pd.DataFrame,
        metrics: Mapping[str, Any],
        environment: Mapping[str, Any] | None = None,
        timings: Mapping[str, Any] | None = None,
        prompt_prefix: str | None = None,
        samples: pd.DataFrame | None = None,
    ) -> None:
        """Write the run's predictions and result record (:mod:`.commit`), then mark it done in one catalog transaction.

        A prompted run's ``prompt_prefix`` is kept in its prediction file (see :func:`views.run_prompts`);
        a sampled run's ``samples`` (a sample table) are written first, their checksum kept in the
        prediction file (:mod:`seedscope.store.files`). A run that already has a result keeps it: this
        one is recorded as an attempt.
        """
        task, started, attempts = self.catalog.run_state(run_id)
        self._record_checksums()
        self._finish(commit_success(self.path, run_id, task, predictions, metrics, environment=environment,
                                    timings=timings, attempt=max(attempts, 1), started_at=started,
                                    prompt_prefix=prompt_prefix, samples=samples))

    def record_failure(self, run_id: str, error: str, timings: Mapping[str, Any] | None = None) -> None:
        """The run raised: keep its error text; its predictions file, if a killed attempt left one, goes."""
        _, started, attempts = self.catalog.run_state(run_id)
        self._record_checksums()
        done = commit_failure(self.path, run_id, error, timings=timings, attempt=max(attempts, 1), started_at=started)
        if done.claimed:
            self.prediction_path(run_id).unlink(missing_ok=True)
            self.samples_path(run_id).unlink(missing_ok=True)
        self._finish(done)

    def _finish(self, done: Commit) -> None:
        """The catalog's row of a committed outcome: the result, or for an attempt only its count."""
        with self.catalog.transaction() as db:
            if done.claimed:
                apply(db, [done.record])
            else:
                db.execute("UPDATE runs SET attempts = ? WHERE run_id = ? AND typeof(attempts) = 'integer' AND "
                           "attempts < ?", (done.record["attempt"], done.record["run_id"], done.record["attempt"]))

    def _record_checksums(self) -> None:
        """A store written before checksums (schema 1) gains them at its first write: every done run whose
        file is sound (:func:`verify`) gets its file's SHA-256, so a done run without one is a problem."""
        if self.catalog.has_checksums():
            return
        broken = {problem.run_id for problem in verify(self, full=False)}
        self.catalog.add_checksums({
            run_id: sha256(self.prediction_path(run_id).read_bytes())
            for run_id, (status, _, _) in self.catalog.checksums().items() if status == "done" and run_id not in broken
        })

    # ---- reading (see seedscope.store.views) ----------------------------------------------

    def runs(self) -> pd.DataFrame:
        """One row per planned run, in plan order (columns: :func:`seedscope.store.views.runs_frame`)."""
        return views.runs_frame(self)

    def environment(self) -> pd.DataFrame:
        """The recorded environment of every done run (one row per run, nested keys joined with dots)."""
        return views.environment_frame(self)

    def predictions(self, task: str | None = None, model: str | None = None, *, uncalibrated: bool = False) -> pd.DataFrame:
        """The long prediction table of every done run (see :func:`seedscope.store.views.predictions_table`)."""
        return views.predictions_table(self, task, model, uncalibrated=uncalibrated)

    def samples(self) -> pd.DataFrame:
        """Every sample of the done runs that sampled (see :func:`seedscope.store.views.samples_table`)."""
        return views.samples_table(self)

    # ---- integrity ------------------------------------------------------------------------

    def verify(self, full: bool = True, contents: bool = True) -> list[Problem]:
        """Every integrity problem, with its kind and repair (see :mod:`seedscope.store.integrity`), after taking in
        the results waiting (a damaged catalog cannot take them in: it is then the problem reported); without
        ``contents``, the files are found but not read."""
        if self.writable():
            try:
                self.take_in()
            except CatalogLocked:
                raise
            except SeedscopeError:
                pass
        return verify(self, full=full, contents=contents)

    def check(self) -> list[str]:
        """Integrity problems, one sentence each (empty when the store is sound)."""
        return [problem.message for problem in self.verify()]
