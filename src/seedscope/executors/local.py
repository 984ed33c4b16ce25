"""Run a sweep's specs one after another in this process (the embedded default), and pick how to run them here."""

from __future__ import annotations

import os
from functools import partial
from typing import Callable, Sequence

from seedscope.executors.base import (
    ExecutionSummary, Progress, Runner, data_dir_text, default_runner, record_outcome, runs_to_do,
)
from seedscope.plan import RunSpec
from seedscope.store import ExperimentStore


def execute(
    specs: Sequence[RunSpec],
    store: ExperimentStore,
    *,
    data_dir: str | os.PathLike | None = None,
    fail_fast: bool = False,
    progress: Progress | None = None,
    runner: Runner | None = None,
) -> ExecutionSummary:
    """Run every spec not yet done in ``store``; each result is stored as soon as it exists."""
    runner = runner or default_runner()
    summary = ExecutionSummary()
    todo = runs_to_do(specs, store, summary)
    if progress:
        progress.start(len(todo))
    try:
        for spec in todo:
            store.mark_running(spec.run_id)
            if progress:
                progress.run_started(spec)
            hook = (lambda done, total, spec=spec: progress.step(spec, done, total)) if progress else None
            try:
                outcome = runner(spec, data_dir_text(data_dir), on_step=hook)
            except Exception as error:  # a failed run is recorded and the sweep goes on
                outcome = error
            if progress:
                progress.run_finished(spec, not isinstance(outcome, Exception))
            record_outcome(store, spec, outcome, summary, fail_fast)
    finally:
        if progress:
            progress.stop()
    return summary


def here(fuse: int = 1, parallel: int = 1) -> Callable[..., ExecutionSummary]:
    """The executor that runs specs on this machine: fused ``fuse`` at a time, ``parallel`` worker processes at once,
    or one after another; called ``(specs, store, *, data_dir, fail_fast, progress, runner)``."""
    if fuse > 1:
        from seedscope.executors import fused

        return partial(fused.execute, fuse=fuse)
    if parallel > 1:
        from seedscope.executors import packing

        return partial(packing.execute, parallel=parallel)
    return execute
