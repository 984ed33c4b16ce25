"""Run a sweep's specs as Ray tasks: a local cluster by default, or an existing one.

``ray.init()`` without an address starts a local cluster (the embedded default for parallel
runs); ``address=`` joins one ("auto", or "ray://head:10001"). Each run asks for
``num_cpus`` CPUs and ``num_gpus`` GPUs — a fraction such as 0.25 packs four small runs on
one GPU. Results come back to this process and are stored here as they arrive, so the store
stays a single writer. Training steps reach the progress display through a Ray queue.
"""

from __future__ import annotations

import os
from typing import Sequence

from seedscope.errors import SeedscopeError
from seedscope.executors.base import (
    ExecutionSummary, Progress, Runner, data_dir_text, default_runner, record_outcome, runs_to_do,
)
from seedscope.plan import RunSpec
from seedscope.store import ExperimentStore

#: seconds between polls of finished tasks and step messages
POLL_SECONDS = 0.5


def _run_remote(runner: Runner, spec_dict: dict, data_dir: str | None, steps=None):
    """The Ray task: rebuild the spec, run it, report steps to the driver's queue."""
    spec = RunSpec.from_dict(spec_dict)
    hook = None
    if steps is not None:
        def hook(done: int, total: int) -> None:
            steps.put_nowait((spec.run_id, done, total))
    return runner(spec, data_dir, on_step=hook)


def execute(
    specs: Sequence[RunSpec],
    store: ExperimentStore,
    *,
    data_dir: str | os.PathLike | None = None,
    fail_fast: bool = False,
    progress: Progress | None = None,
    runner: Runner | None = None,
    address: str | None = None,
    num_cpus: float = 1,
    num_gpus: float = 0,
    cluster_cpus: int | None = None,
) -> ExecutionSummary:
    """Run every spec not yet done in ``store`` as a Ray task; store each result as it arrives.

    ``cluster_cpus`` caps the CPUs of a local cluster this call starts (ignored when joining).
    """
    import ray

    runner = runner or default_runner()
    summary = ExecutionSummary()
    todo = runs_to_do(specs, store, summary)
    if not todo:
        return summary
    if num_gpus < 0 or num_cpus <= 0:
        raise SeedscopeError("a Ray run needs num_cpus > 0 and num_gpus >= 0")
    started_here = not ray.is_initialized()
    if started_here:
        try:
            ray.init(address=address, num_cpus=None if address else cluster_cpus, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        except ConnectionError as error:
            raise SeedscopeError(f"cannot join the Ray cluster at {address}: {error}") from error
    try:
        return _execute(ray, todo, store, summary, data_dir_text(data_dir), fail_fast, progress, runner, num_cpus, num_gpus)
    finally:
        if started_here:
            ray.shutdown()


def _execute(ray, todo, store, summary, data_dir, fail_fast, progress, runner, num_cpus, num_gpus):
    from ray.util.queue import Queue

    steps = Queue() if progress else None
    task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=0)(_run_remote)
    runner_ref = ray.put(runner)
    in_flight = {}
    if progress:
        progress.start(len(todo))
    try:
        for spec in todo:
            store.mark_running(spec.run_id)
            in_flight[task.remote(runner_ref, spec.to_dict(), data_dir, steps)] = spec
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL_SECONDS)
            _forward_steps(steps, progress, {s.run_id: s for s in in_flight.values()})
            for ref in ready:
                spec = in_flight.pop(ref)
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayTaskError as error:
                    outcome = error.cause if isinstance(error.cause, Exception) else error
                except ray.exceptions.RayError as error:  # the worker died (out of memory, node lost …)
                    outcome = error
                if progress:
                    progress.run_finished(spec, not isinstance(outcome, Exception))
                record_outcome(store, spec, outcome, summary, fail_fast)
    finally:
        for ref in in_flight:
            ray.cancel(ref, force=True)
        if progress:
            progress.stop()
        if steps is not None:
            steps.shutdown()
    return summary


def _forward_steps(steps, progress, specs_by_id: dict) -> None:
    """Hand the step messages that remote runs queued to the progress display."""
    while steps is not None and not steps.empty():
        run_id, done, total = steps.get_nowait()
        if run_id in specs_by_id:
            progress.step(specs_by_id[run_id], done, total)
