"""Run a sweep's specs fused: runs that differ only in their seeds, K at a time, as one stacked model here.

Runs share a fused group when everything but their seeds is the same (task, model, method,
hyper-parameters: one cost profile); each group holds up to K of them, in plan order. The group
trains in this process (:func:`seedscope.runners.run_fused`) and each member's outcome reaches
the store as a sequential run's would: its result, or its failure — a member whose loss became
NaN or infinite is recorded failed while the others finish. An error that stops the whole group
(a model that cannot be fused, say) is recorded for every member. A run the store holds as done
is never redone, so a resumed sweep fuses exactly the unfinished runs; Ctrl-C leaves the group's
runs unfinished, as it leaves a sequential run.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from seedscope.errors import SeedscopeError
from seedscope.executors.base import ExecutionSummary, Progress, data_dir_text, first_line, record_outcome, runs_to_do
from seedscope.plan import RunSpec
from seedscope.plan.runs import profile
from seedscope.store import ExperimentStore


def fused_groups(specs: Sequence[RunSpec], fuse: int) -> list[list[RunSpec]]:
    """The specs in groups of up to ``fuse`` runs that differ only in their seeds, each profile's in plan order."""
    by_profile: dict[tuple, list[RunSpec]] = {}
    for spec in specs:
        by_profile.setdefault(profile(spec), []).append(spec)
    return [runs[start:start + fuse] for runs in by_profile.values() for start in range(0, len(runs), fuse)]


def check_fusable(specs: Sequence[RunSpec]) -> None:
    """Refuse, before anything is written, a plan that holds a run fused seeds cannot train."""
    from seedscope.runners.finetune.fused import check

    for spec in {profile(spec): spec for spec in specs}.values():
        check(spec)


def execute(
    specs: Sequence[RunSpec],
    store: ExperimentStore,
    *,
    data_dir: str | os.PathLike | None = None,
    fail_fast: bool = False,
    progress: Progress | None = None,
    runner=None,
    fuse: int = 2,
) -> ExecutionSummary:
    """Run every spec not yet done in ``store``, fused ``fuse`` at a time; every member's outcome is stored."""
    from seedscope.runners import run_fused

    if runner is not None:
        raise SeedscopeError("a runner of your own trains one run at a time; leave --fuse out to use it")
    summary = ExecutionSummary()
    todo = runs_to_do(specs, store, summary)
    if progress:
        progress.start(len(todo))
    try:
        for group in fused_groups(todo, fuse):
            for spec in group:
                store.mark_running(spec.run_id)
                if progress:
                    progress.run_started(spec)
            hook = progress.step if progress else None
            try:
                outcomes = run_fused(group, data_dir_text(data_dir), on_step=hook)
            except Exception as error:  # the whole group failed: each of its runs is recorded failed, the sweep goes on
                outcomes = [error] * len(group)
            for spec, outcome in zip(group, outcomes):
                if progress:
                    progress.run_finished(spec, not isinstance(outcome, Exception))
                record_outcome(store, spec, outcome, summary, fail_fast=False)
            failed = [spec.run_id for spec in group if spec.run_id in summary.failed]
            if fail_fast and failed:
                raise SeedscopeError(f"run {failed[0]} failed ({first_line(summary.failed[failed[0]])}); stopped "
                                     "because of --fail-fast")
    finally:
        if progress:
            progress.stop()
    return summary
