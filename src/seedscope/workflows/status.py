"""Where a store's runs stand, as ``seedscope status`` shows it: how many are in each state, which need
attention, the time the others still need, and the store's integrity problems.

Up to :data:`FULL_RUNS` runs (or when asked) everything is read: every catalog cell (metrics, timings …)
and every finished run's file against its checksum, as ``seedscope verify`` does. Beyond, a
glance: one query reads each run's state, times and error without parsing a JSON cell, and the
integrity check finds each finished run's file without reading it, so a store of 10,000 runs
opens in a fraction of a second (``seedscope verify`` still reads them all).

The counts by state come from :func:`state_counts`, over the catalog's states (pending, running,
done, failed) or, for a SLURM sweep, the queue's (:func:`with_queue_states`: queued, running, lost).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

import pandas as pd

from seedscope.store import ExperimentStore, Problem, views
from seedscope.workflows.costing import duration_text, remaining_seconds

#: a run still running after this many times the median duration of the finished runs needs attention: it may be
#: lost (its process killed without the catalog knowing)
LONG_RUNNING = 3.0
#: up to this many runs ``status`` reads everything (a fraction of a second); beyond, a glance (see above)
FULL_RUNS = 1000


@dataclass
class StoreStatus:
    """A store's runs (:meth:`ExperimentStore.runs`, or at a glance :func:`~seedscope.store.views.run_states_frame`),
    how many are in each state, the runs that need attention (their rows with their seeds and a ``reason``), the
    time the others still need (seconds, finished runs it rests on) and the integrity problems; ``full``: whether
    every catalog cell and every finished run's file were read; ``queue_note``: why a SLURM sweep's queue was not
    asked (its runs then show the catalog's states)."""

    runs: pd.DataFrame
    counts: dict[str, int]
    attention: pd.DataFrame
    remaining: tuple[float, int] | None
    problems: list[Problem]
    full: bool
    queue_note: str | None = None

    @property
    def to_do(self) -> int:
        return int((self.runs["status"] != "done").sum())


def state_counts(runs: pd.DataFrame) -> dict[str, int]:
    """How many runs are in each state, the most frequent first (ties in plan order)."""
    return {str(state): int(n) for state, n in runs["status"].value_counts().items()}


def needs_attention(runs: pd.DataFrame, now: datetime | None = None) -> pd.DataFrame:
    """The failed and lost runs (reason: the last line of their error, or why SLURM lost the job) and those running
    longer than :data:`LONG_RUNNING` times the finished runs' median duration, in plan order, with a ``reason``
    column."""
    now = now or datetime.now(timezone.utc)
    failed = runs["status"].isin(("failed", "lost"))
    reasons = pd.Series("", index=runs.index, dtype=object)
    reasons[failed] = [_last_line(error) for error in runs.loc[failed, "error"]]
    finished = runs.loc[runs["status"] == "done", "duration_s"].dropna()
    running = runs["status"] == "running"
    if len(finished) and running.any():
        typical = float(finished.median())
        started = pd.to_datetime(runs.loc[running, "started_at"], utc=True, errors="coerce", format="ISO8601")
        elapsed = (pd.Timestamp(now) - started).dt.total_seconds()
        long = elapsed[elapsed > LONG_RUNNING * max(typical, 1.0)]
        reasons[long.index] = [f"running for {duration_text(seconds)}, {seconds / max(typical, 1.0):.0f}× the median "
                               f"{duration_text(typical)} of the finished runs: lost?" for seconds in long]
    chosen = reasons != ""
    return runs[chosen].assign(reason=reasons[chosen])


def _last_line(error) -> str:
    text = "" if error is None or (isinstance(error, float) and pd.isna(error)) else str(error).strip()
    return text.splitlines()[-1][:200] if text else "failed (no error recorded)"


def with_queue_states(store: ExperimentStore, runs: pd.DataFrame) -> tuple[pd.DataFrame, str | None]:
    """For a SLURM sweep, each unfinished run's state from the queue (queued, running, lost: why, in ``error``) and
    its job (task and node), and None; where SLURM cannot be asked (a copy of the store on a laptop), the runs as
    the catalog has them and why. Other stores' runs as they are."""
    from seedscope.errors import SeedscopeError
    from seedscope.executors.slurm_jobs import is_slurm_store, run_states

    if not is_slurm_store(store.path):
        return runs, None
    try:
        states = run_states(store)
    except SeedscopeError as error:
        return runs, f"the SLURM queue was not asked ({error}); unfinished runs show the catalog's status"
    runs = runs.copy()
    runs["status"] = [states[run_id].state for run_id in runs["run_id"]]
    runs["job"] = [" on ".join(part for part in (states[r].task, states[r].node) if part) for r in runs["run_id"]]
    lost = runs["status"] == "lost"
    runs.loc[lost, "error"] = [states[run_id].reason for run_id in runs.loc[lost, "run_id"]]
    return runs, None


def store_status(store: ExperimentStore, *, full: bool | None = None, now: datetime | None = None) -> StoreStatus:
    """Where ``store``'s runs stand (see :class:`StoreStatus`); ``full`` None: read everything up to
    :data:`FULL_RUNS` runs, else glance."""
    states = views.run_states_frame(store)
    full = len(states) <= FULL_RUNS if full is None else full
    runs, queue_note = with_queue_states(store, store.runs() if full else states)
    attention = needs_attention(runs, now)
    if not full:
        attention = views.with_seeds(store, attention)
    to_do = bool((runs["status"] != "done").any())
    return StoreStatus(runs, state_counts(runs), attention, remaining_seconds(store, runs) if to_do else None,
                       store.verify(full=full, contents=full), full, queue_note)
