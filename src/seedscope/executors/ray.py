"""Run a sweep's specs as Ray tasks: a local cluster by default, or an existing one.

Without an address a local cluster is started (the embedded default for parallel runs);
``address=`` (or ``$RAY_ADDRESS``) joins one ("auto", "head:6379" or "ray://head:10001"). Each run
asks for ``num_cpus`` CPUs and ``num_gpus`` GPUs — a fraction such as 0.25 packs four small
runs on one GPU. Results come back to this process and are stored here as they arrive, so the
store stays a single writer. A run is marked running when its task starts (queued runs stay
pending), and its training steps reach the progress display, through a Ray queue whose actor
lives on this process's own node: a worker node may be lost (its runs are started again
elsewhere), but nothing this process needs lives only on one.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Iterator, Sequence

from seedscope.errors import SeedscopeError
from seedscope.executors.base import (
    ExecutionSummary, Progress, Runner, data_dir_text, default_runner, record_outcome, runs_to_do,
)
from seedscope.plan import RunSpec
from seedscope.store import ExperimentStore
from seedscope.tasks.examples import DATA_DIR_ENV

#: seconds between polls of finished tasks and step messages
POLL_SECONDS = 0.5
#: seconds a cluster's head has to answer before joining it is refused (``ray.init`` itself retries for minutes)
ANSWER_SECONDS = 10.0


def cluster_address(address: str | None) -> str | None:
    """The running cluster to join: ``address``, else ``$RAY_ADDRESS`` as Ray reads it; None: start a local one
    (``ray.init(address="local")``; a bare ``ray.init()`` would join the last cluster ``ray start`` made on this
    machine, which ``--ray-address auto`` asks for by name)."""
    target = address or os.environ.get("RAY_ADDRESS") or None
    return None if target == "local" else target


def node_data_dir(data_dir: str | os.PathLike | None) -> str | None:
    """The data folder as every node must find it: ``data_dir`` or this process's ``$SEEDSCOPE_DATA_DIR``, absolute
    (a node resolves neither a relative path nor an environment variable as this process does)."""
    folder = data_dir_text(data_dir) or os.environ.get(DATA_DIR_ENV)
    return str(Path(folder).absolute()) if folder else None


@contextmanager
def connected(address: str | None = None, cluster_cpus: int | None = None) -> Iterator[object]:
    """Ray, joined to the cluster at ``address`` or a local cluster started here (at most ``cluster_cpus`` CPUs);
    one already initialised is used as it is. What this call started it stops, whatever happens (an error,
    Ctrl-C)."""
    import ray

    if ray.is_initialized():
        yield ray
        return
    target = cluster_address(address)
    if target:
        _check_answers(target)
    try:
        try:
            ray.init(address=target or "local", num_cpus=None if target else cluster_cpus, include_dashboard=False,
                     log_to_driver=False, configure_logging=False)
        except ConnectionError as error:
            raise SeedscopeError(f"cannot join the Ray cluster at {target}: {error}") from error
        yield ray
    finally:
        if ray.is_initialized():
            ray.shutdown()


def _check_answers(address: str) -> None:
    """Refuse at once a ``host:port`` (or ``ray://host:port``) where nothing answers; ``auto`` is Ray's to find."""
    import socket

    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=ANSWER_SECONDS).close()
    except OSError as error:
        raise SeedscopeError(f"cannot join the Ray cluster at {address}: nothing answers at {host}:{port} "
                             f"({error.strerror or error}); start its head first (`ray start --head` prints the "
                             "address to join)") from error


def _run_remote(runner: Runner, spec_dict: dict, data_dir: str | None, events, report_steps: bool):
    """The Ray task: say it started, run the spec, report its steps to the driver's queue; the result names the
    node that ran it (its environment's ``ray``)."""
    import socket

    import ray

    spec = RunSpec.from_dict(spec_dict)
    events.put((spec.run_id, None, None))  # started: the driver marks the run running only now
    hook = None
    if report_steps:
        def hook(done: int, total: int) -> None:
            events.put_nowait((spec.run_id, done, total))
    result = runner(spec, data_dir, on_step=hook)
    node = {"node_id": ray.get_runtime_context().get_node_id(), "node_ip": ray.util.get_node_ip_address(),
            "hostname": socket.gethostname()}
    return replace(result, environment={**result.environment, "ray": node})


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
    max_retries: int = 2,
) -> ExecutionSummary:
    """Run every spec not yet done in ``store`` as a Ray task; store each result as it arrives.

    ``cluster_cpus`` caps the CPUs of a local cluster this call starts (ignored when joining).
    A run whose worker dies (killed, out of memory, node lost) is started again up to
    ``max_retries`` times, on any node, each start counted in the run's ``attempts``; a run that
    raises is not retried (it would raise again) and is recorded failed.
    """
    runner = runner or default_runner()
    summary = ExecutionSummary()
    todo = runs_to_do(specs, store, summary)
    if not todo:
        return summary
    if num_gpus < 0 or num_cpus <= 0:
        raise SeedscopeError("a Ray run needs num_cpus > 0 and num_gpus >= 0")
    if max_retries < 0:
        raise SeedscopeError(f"--max-retries must be 0 or more, not {max_retries}")
    with connected(address, cluster_cpus) as ray:
        return _execute(ray, todo, store, summary, node_data_dir(data_dir), fail_fast, progress, runner, num_cpus,
                        num_gpus, max_retries)


def _execute(ray, todo, store, summary, data_dir, fail_fast, progress, runner, num_cpus, num_gpus, max_retries):
    from ray.util.queue import Queue
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    # the queue's actor on this process's node, which is lost only with this process (by default Ray may place it
    # on a worker node, and losing that node would stop the sweep); it needs no CPU, so a head without any takes it
    here = NodeAffinitySchedulingStrategy(ray.get_runtime_context().get_node_id(), soft=False)
    events = Queue(actor_options={"num_cpus": 0, "scheduling_strategy": here})
    task = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus, max_retries=max_retries, retry_exceptions=False)(_run_remote)
    runner_ref = ray.put(runner)
    in_flight = {task.remote(runner_ref, spec.to_dict(), data_dir, events, progress is not None): spec for spec in todo}
    started: set[str] = set()
    if progress:
        progress.start(len(todo))
    try:
        while in_flight:
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=POLL_SECONDS)
            _handle_events(events, store, progress, {s.run_id: s for s in in_flight.values()}, started)
            for ref in ready:
                spec = in_flight.pop(ref)
                try:
                    outcome = ray.get(ref)
                except ray.exceptions.RayTaskError as error:
                    outcome = error.cause if isinstance(error.cause, Exception) else error
                except ray.exceptions.RayError as error:  # the worker died (out of memory, node lost …)
                    outcome = error
                specs_by_id = {s.run_id: s for s in [*in_flight.values(), spec]}
                _handle_events(events, store, progress, specs_by_id, started)  # its last start, if any
                if spec.run_id not in started:  # the worker died before saying it started: still an attempt
                    store.mark_running(spec.run_id)
                if progress:
                    progress.run_finished(spec, not isinstance(outcome, Exception))
                record_outcome(store, spec, outcome, summary, fail_fast)
    except ray.exceptions.RayActorError as error:  # the queue's actor is on this process's node: the cluster is gone
        raise SeedscopeError(f"lost the Ray cluster: its node on this machine stopped answering ({type(error).__name__});"
                             " the runs recorded so far are kept: start the cluster again and rerun the same command "
                             "with --resume") from error
    finally:
        for ref in in_flight:  # fail-fast (or an interrupt): runs not started stay pending
            ray.cancel(ref, force=True)
        if progress:
            progress.stop()
        events.shutdown()
    return summary


def _handle_events(events, store, progress, specs_by_id: dict, started: set) -> None:
    """Every start of a run is marked running (a retry after a worker died counts as an attempt); steps go to the display."""
    while not events.empty():
        run_id, done, total = events.get_nowait()
        spec = specs_by_id.get(run_id)
        if spec is None:
            continue
        if done is None:
            store.mark_running(run_id)
            if run_id not in started:
                started.add(run_id)
                if progress:
                    progress.run_started(spec)
        elif progress:
            progress.step(spec, done, total)
