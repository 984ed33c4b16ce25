"""What every executor shares: which runs to do, and how an outcome reaches the store.

An executor takes the plan's run specs and an :class:`~seedscope.store.ExperimentStore`,
runs every spec the store does not hold as done (so a resumed sweep redoes exactly the
unfinished runs), stores each result as soon as it arrives, records a run that raises as
failed with its error and carries on — or, with ``fail_fast``, stops with a
:class:`SeedscopeError` naming the run.
"""

from __future__ import annotations

import os
import traceback
from dataclasses import dataclass, field
from typing import Callable, Protocol, Sequence

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.runners.result import RunResult
from seedscope.store import ExperimentStore

#: a runner: ``runner(spec, data_dir, on_step=hook) -> RunResult`` (default: the one of the spec's method)
Runner = Callable[..., RunResult]
#: the longest error text kept in the catalog
MAX_ERROR_CHARS = 4000


class Progress(Protocol):
    """What executors report to a progress display (see ``executors.progress``)."""

    def start(self, total_runs: int) -> None: ...
    def run_started(self, spec: RunSpec) -> None: ...
    def step(self, spec: RunSpec, done: int, total: int) -> None: ...
    def run_finished(self, spec: RunSpec, ok: bool) -> None: ...
    def stop(self) -> None: ...


@dataclass
class ExecutionSummary:
    """What one executor call did: run ids done now, failed now (with their error), already done before; on a
    cluster also the jobs submitted (job id → its run ids) and the runs lost (their job gone without a result, why)."""

    done: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    submitted: dict[str, list[str]] = field(default_factory=dict)
    lost: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.lost


def default_runner() -> Runner:
    from seedscope.runners import run

    return run


def runs_to_do(specs: Sequence[RunSpec], store: ExperimentStore, summary: ExecutionSummary) -> list[RunSpec]:
    """The specs that the store does not hold as done, in plan order; the others count as skipped."""
    pending = {run["run_id"] for run in store.pending_runs()}
    todo = [spec for spec in specs if spec.run_id in pending]
    summary.skipped = [spec.run_id for spec in specs if spec.run_id not in pending]
    return todo


def error_text(error: BaseException) -> str:
    """A user error is its sentence; anything else keeps its traceback (bounded) for debugging."""
    if isinstance(error, SeedscopeError):
        return str(error)
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__)).strip()
    return text[-MAX_ERROR_CHARS:]


def first_line(text: str) -> str:
    """The message of an error text (its last line for a traceback)."""
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else text


def record_outcome(
    store: ExperimentStore, spec: RunSpec, outcome: RunResult | BaseException, summary: ExecutionSummary,
    fail_fast: bool,
) -> None:
    """Store a result, or record the failure (and stop the sweep under ``fail_fast``)."""
    if isinstance(outcome, RunResult):
        store.record_success(spec.run_id, outcome.predictions, outcome.metrics, outcome.environment, outcome.timings,
                             prompt_prefix=outcome.prompt_prefix, samples=outcome.samples)
        summary.done.append(spec.run_id)
        return
    text = error_text(outcome)
    store.record_failure(spec.run_id, text)
    summary.failed[spec.run_id] = text
    if fail_fast:
        raise SeedscopeError(f"run {spec.run_id} failed ({first_line(text)}); stopped because of --fail-fast")


def data_dir_text(data_dir: str | os.PathLike | None) -> str | None:
    return None if data_dir is None else os.fspath(data_dir)
