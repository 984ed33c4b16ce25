"""Run K of a sweep's specs at once on this machine, each in its own worker process.

A seed study is many copies of one small job, and one small job leaves a GPU (or a many-core
CPU) mostly idle; packing K of them keeps it busy. Workers are started with the ``spawn``
method (a fresh interpreter: CUDA and thread pools are never inherited half-initialised) and
each is pinned before it imports torch: on a CPU the cores are split between the workers
(``cores // K`` torch threads each); with GPUs visible, K workers share each GPU and a worker
sees only its own (``CUDA_VISIBLE_DEVICES``). Workers only compute: the results come back
through a pipe of the worker's own and this process alone writes the store, as with Ray (the
executor for clusters). One pipe per worker, never one shared queue: a worker killed while
sending (the out-of-memory killer does not wait) can only break its own channel, where on a
shared queue it would leave the writers' lock held and every other worker blocked. A worker
that dies (killed, out of memory) has its run started once more in a new worker, then
recorded failed with the reason, and the other workers go on.

K runs start at once: no run goes alone to learn its peak memory. Before any run finished, an
estimate from the model's shape decides how many fit, then the largest peak finished runs
recorded (:mod:`seedscope.executors.memory`); K is lowered, with a warning, to what fits. A
run that still runs out of memory beside others — ``torch.cuda.OutOfMemoryError`` on a GPU, its
worker killed by SIGKILL (the out-of-memory killer) on a CPU — is started again with fewer at
once and never recorded failed for that; its timings count such restarts (``packing_retries``).
Only a run out of memory alone fails. A worker keeps what it loaded between runs (the finetune
runner's tokenized data and checkpoint tensors), so its later runs pay their training, not a
start-up.
"""

from __future__ import annotations

import os
import pickle
import signal
import time
import warnings
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Iterator, Sequence

from seedscope.errors import PackingWarning, SeedscopeError
from seedscope.executors.base import (
    ExecutionSummary, Progress, Runner, data_dir_text, default_runner, error_text, record_outcome, runs_to_do,
)
from seedscope.executors.memory import estimated_peak, runs_that_fit
from seedscope.plan import RunSpec
from seedscope.store import ExperimentStore

#: seconds between checks that every busy worker is still alive
POLL_SECONDS = 0.2
#: seconds a worker gets to exit after it is told to stop (then it is killed)
STOP_SECONDS = 5.0
#: seconds the first GPU worker gets to say how much memory its GPU has, before runs start regardless
READY_SECONDS = 120.0
#: a run's timings key: how often it was started again with fewer runs beside it
PACKING_RETRIES = "packing_retries"


class WorkerError(SeedscopeError):
    """A run's error as its worker formatted it (stored as it is, like the local executor's)."""


class OutOfMemory(WorkerError):
    """A run ran out of GPU memory in its worker (packed: started again with fewer at once)."""


def cpu_cores() -> int:
    """The cores this process may use (its affinity mask, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def visible_gpus() -> list[str]:
    """The GPUs a worker may be pinned to: ``CUDA_VISIBLE_DEVICES`` when set, else every device torch counts."""
    named = os.environ.get("CUDA_VISIBLE_DEVICES")
    if named is not None:
        return [device.strip() for device in named.split(",") if device.strip() and device.strip() != "-1"]
    import torch

    return [str(index) for index in range(torch.cuda.device_count())]


def worker_environments(parallel: int, gpus: Sequence[str], cores: int) -> list[dict[str, str]]:
    """The environment of each worker slot: K per GPU, each seeing one; else the cores split K ways."""
    threads = str(max(1, cores // parallel))
    if gpus:
        return [{"CUDA_VISIBLE_DEVICES": gpu, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
                for gpu in gpus for _ in range(parallel)]
    return [{"CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}] * parallel


def _work(inbox, outbox: Connection, runner: Runner, data_dir: str | None) -> None:
    """A worker's loop: run each spec it is given and send its steps and outcome to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole terminal group; the parent stops us
    import torch  # only now: CUDA_VISIBLE_DEVICES and the thread counts were set for this process

    from seedscope.runners.environment import prepare_process

    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    prepare_process()  # before this process's first CUDA call
    outbox.send(("ready", None, _device_memory()))
    while (job := inbox.get()) is not None:
        spec = RunSpec.from_dict(job)
        outbox.send(("started", spec.run_id))

        def hook(done: int, total: int, run_id: str = spec.run_id) -> None:
            outbox.send(("step", run_id, done, total))

        try:
            outcome = runner(spec, data_dir, on_step=hook)
        except torch.cuda.OutOfMemoryError as error:
            outcome = OutOfMemory(error_text(error))
            _free_gpu_memory()
        except Exception as error:  # sent as its text: an exception object may not survive pickling
            outcome = WorkerError(error_text(error))
        outbox.send(("finished", spec.run_id, outcome, _device_memory()))


def _device_memory() -> dict:
    """Total memory of this worker's GPU (bytes), for the parent's fit check; nothing on a CPU."""
    import torch

    if not torch.cuda.is_available():
        return {}
    return {"gpu_total_bytes": torch.cuda.get_device_properties(0).total_memory}


def _free_gpu_memory() -> None:
    """Give back what a run that ran out of memory held, before the worker's next run."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


@contextmanager
def _environment(values: dict[str, str]) -> Iterator[None]:
    """Set environment variables while a worker is started (a spawned process inherits them)."""
    previous = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in previous.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@dataclass
class _Slot:
    """One worker process, its two channels, and the run it is doing (None when idle)."""

    environment: dict[str, str]
    process: object = None
    inbox: object = None
    outbox: Connection | None = None  # this end reads; None once the worker's end closed
    spec: RunSpec | None = None
    started: bool = False
    crowd: int = 0  # the most runs busy at once while this slot's run ran

    def close_outbox(self) -> None:
        if self.outbox is not None:
            self.outbox.close()
            self.outbox = None


@dataclass
class _Pack:
    """The workers, the runs waiting, and what the parent does with their messages."""

    context: object
    runner: Runner
    data_dir: str | None
    store: ExperimentStore
    summary: ExecutionSummary
    fail_fast: bool
    progress: Progress | None
    retries: int
    slots: list[_Slot]
    waiting: deque = field(default_factory=deque)
    attempts: dict[str, int] = field(default_factory=dict)
    device: dict = field(default_factory=dict)
    cap: int = 0  # runs at once after running out of memory beside others (0: no cap)
    packing_retries: dict[str, int] = field(default_factory=dict)

    def start_worker(self, slot: _Slot) -> None:
        slot.close_outbox()  # a dead worker's channel may hold half a message
        slot.inbox = self.context.Queue()
        slot.outbox, sending = self.context.Pipe(duplex=False)
        with _environment(slot.environment):
            slot.process = self.context.Process(target=_work, args=(slot.inbox, sending, self.runner, self.data_dir),
                                                daemon=True)
            slot.process.start()
        sending.close()  # the worker holds the only sending end: its death reads as the end of the pipe

    def assign(self, limit: int) -> None:
        """Give waiting runs to idle workers, at most ``limit`` runs busy at once."""
        for slot in self.slots:
            if not self.waiting or sum(s.spec is not None for s in self.slots) >= limit:
                return
            if slot.spec is not None:
                continue
            if slot.process is None or not slot.process.is_alive():
                self.start_worker(slot)
            slot.spec, slot.started, slot.crowd = self.waiting.popleft(), False, 0
            self.attempts[slot.spec.run_id] = self.attempts.get(slot.spec.run_id, 0) + 1
            slot.inbox.put(slot.spec.to_dict())
            busy = [other for other in self.slots if other.spec is not None]
            for other in busy:
                other.crowd = max(other.crowd, len(busy))

    @property
    def busy(self) -> bool:
        return any(slot.spec is not None for slot in self.slots)

    def handle(self, slot: _Slot, message: tuple) -> None:
        """A message from ``slot``'s worker: its run started, made a step, or finished."""
        kind, run_id = message[:2]
        if kind == "ready":
            self.device.update(message[2])
            return
        if slot.spec is None or slot.spec.run_id != run_id:
            return  # a message of a run this slot no longer holds
        if kind == "started":
            slot.started = True
            self.store.mark_running(run_id)
            if self.progress:
                self.progress.run_started(slot.spec)
        elif kind == "step":
            if self.progress:
                self.progress.step(slot.spec, message[2], message[3])
        else:
            spec, slot.spec = slot.spec, None
            self.device.update(message[3])
            if isinstance(message[2], OutOfMemory) and slot.crowd > 1:
                self.again_with_fewer(spec, slot.crowd, "ran out of GPU memory")
            else:
                self.finish(spec, message[2])

    def again_with_fewer(self, spec: RunSpec, crowd: int, what: str) -> None:
        """A run out of memory beside others: first in line again, with at most ``crowd - 1`` runs at once."""
        self.cap = crowd - 1 if not self.cap else min(self.cap, crowd - 1)
        self.packing_retries[spec.run_id] = self.packing_retries.get(spec.run_id, 0) + 1
        self.waiting.appendleft(spec)
        warnings.warn(f"run {spec.run_id} {what} beside {crowd - 1} other run(s); starting it again with "
                      f"at most {self.cap} at once", PackingWarning, stacklevel=2)

    def finish(self, spec: RunSpec, outcome) -> None:
        if not isinstance(outcome, Exception):
            outcome.timings[PACKING_RETRIES] = self.packing_retries.get(spec.run_id, 0)
        if self.progress:
            self.progress.run_finished(spec, not isinstance(outcome, Exception))
        record_outcome(self.store, spec, outcome, self.summary, self.fail_fast)

    def check_workers(self) -> None:
        """A busy worker that died: killed beside others, its run starts again with fewer at once; else again
        (``retries`` times), then recorded failed with the reason."""
        for slot in self.slots:
            if slot.spec is None or slot.process.is_alive():
                continue
            self.drain(timeout=0.5)  # its last messages, if it sent them before dying
            if slot.spec is None:
                continue
            spec, slot.spec = slot.spec, None
            if not slot.started:  # it died before saying so: still an attempt
                self.store.mark_running(spec.run_id)
            if slot.process.exitcode == -signal.SIGKILL and slot.crowd > 1:  # the out-of-memory killer, packed
                self.again_with_fewer(spec, slot.crowd, "was killed by SIGKILL (often the out-of-memory killer)")
                continue
            if self.attempts[spec.run_id] - self.packing_retries.get(spec.run_id, 0) <= self.retries:
                self.waiting.appendleft(spec)
                continue
            self.finish(spec, SeedscopeError(death_reason(slot.process.exitcode, self.attempts[spec.run_id])))

    def wait_for_device(self) -> None:
        """Until a GPU worker said how much memory its GPU has (or every worker died, or READY_SECONDS passed)."""
        deadline = time.monotonic() + READY_SECONDS
        while ("gpu_total_bytes" not in self.device and time.monotonic() < deadline
               and any(slot.process.is_alive() for slot in self.slots)):
            self.drain(POLL_SECONDS)

    def drain(self, timeout: float) -> None:
        """Handle every message that arrives within ``timeout`` seconds (at least one wait)."""
        deadline = time.monotonic() + timeout
        while True:
            open_slots = {slot.outbox: slot for slot in self.slots if slot.outbox is not None}
            ready = wait(list(open_slots), timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                return
            for outbox in ready:
                slot = open_slots[outbox]
                try:
                    message = outbox.recv()
                except (EOFError, OSError, pickle.UnpicklingError):  # the worker ended, perhaps mid-message
                    slot.close_outbox()
                    continue
                self.handle(slot, message)

    def stop(self) -> None:
        """Tell idle workers to exit, end the others (an interrupt, fail-fast); never leave one behind."""
        for slot in self.slots:
            if slot.process is not None and slot.process.is_alive():
                if slot.spec is None:
                    slot.inbox.put(None)
                else:
                    slot.process.terminate()
        for slot in self.slots:
            if slot.process is not None:
                slot.process.join(STOP_SECONDS)
                if slot.process.is_alive():
                    slot.process.kill()
                    slot.process.join()
            slot.close_outbox()


def death_reason(exitcode: int | None, attempts: int) -> str:
    """Why a worker ended without a result, in words (a SIGKILL is usually the out-of-memory killer)."""
    if exitcode is not None and exitcode < 0:
        name = signal.Signals(-exitcode).name
        cause = f"was killed by {name}" + (" (often the out-of-memory killer)" if name == "SIGKILL" else "")
    else:
        cause = f"exited with status {exitcode}"
    return f"the worker process running this run {cause}; tried {attempts} time(s)"


def execute(
    specs: Sequence[RunSpec],
    store: ExperimentStore,
    *,
    data_dir: str | os.PathLike | None = None,
    fail_fast: bool = False,
    progress: Progress | None = None,
    runner: Runner | None = None,
    parallel: int = 2,
    retries: int = 1,
    gpus: Sequence[str] | None = None,
) -> ExecutionSummary:
    """Run every spec not yet done in ``store``, ``parallel`` at once (per GPU when GPUs are visible).

    ``gpus`` overrides the visible GPUs (``[]``: CPU workers only). A run whose worker dies is
    started again up to ``retries`` times (besides restarts with fewer at once after running out
    of memory packed); a run that raises is recorded failed, not retried.
    """
    import multiprocessing

    if parallel < 1:
        raise SeedscopeError(f"--parallel must be 1 or more, not {parallel}")
    if retries < 0:
        raise SeedscopeError(f"retries must be 0 or more, not {retries}")
    summary = ExecutionSummary()
    todo = runs_to_do(specs, store, summary)
    if not todo:
        return summary
    gpus = list(visible_gpus() if gpus is None else gpus)
    environments = worker_environments(parallel, gpus, cpu_cores())
    pack = _Pack(multiprocessing.get_context("spawn"), runner or default_runner(), data_dir_text(data_dir), store,
                 summary, fail_fast, progress, retries, [_Slot(env) for env in environments[:len(todo)]],
                 deque(todo))
    seen, warned = None, False
    if progress:
        progress.start(len(todo))
    try:
        for slot in pack.slots:  # all start now: their imports overlap the estimate
            pack.start_worker(slot)
        estimated = estimated_peak(todo) if len(pack.slots) > 1 else None
        if gpus and estimated is not None:
            pack.wait_for_device()
        while pack.waiting or pack.busy:
            if seen != (len(summary.done) + len(summary.failed), len(pack.device)):  # peaks or the GPU's size may tell more
                seen = (len(summary.done) + len(summary.failed), len(pack.device))
                limit, note = runs_that_fit(store, len(pack.slots), gpus, pack.device, estimated)
                if note and not warned:
                    warnings.warn(note, PackingWarning, stacklevel=2)
                    warned = True
            pack.assign(min(limit, pack.cap or limit))
            pack.drain(POLL_SECONDS)
            pack.check_workers()
    finally:
        pack.stop()
        if progress:
            progress.stop()
    return summary
