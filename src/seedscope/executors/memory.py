"""How many runs fit in memory at once: estimated before any run, then from the peaks runs recorded.

Every run records its process's peak resident memory (and, on a GPU, the peak memory torch
allocated there) in its timings (:func:`seedscope.runners.run`). Before a packing executor
puts K runs side by side, it takes the largest recorded peak (of finished runs: the first
wave's, or those of a resumed sweep) or, before any run finished, an estimate from the
model's shape (:func:`training_bytes`), and lowers K to what the machine holds. No run goes
alone to learn its peak: K start at once, and a run that still runs out of memory packed is
started again with fewer beside it (:mod:`seedscope.executors.packing`).
"""

from __future__ import annotations

import json
from typing import Sequence

from seedscope.plan import RunSpec
from seedscope.runners.finetune.footprint import PROCESS_BYTES, activation_bytes
from seedscope.store import ExperimentStore

#: timings keys of a run's peak memory, in bytes
PEAK_RSS, PEAK_GPU = "peak_memory_bytes", "peak_gpu_memory_bytes"
#: share of the free memory runs may take (the rest: the system, the parent, fragmentation)
HEADROOM = 0.9
#: what a process's CUDA context takes on its GPU besides what torch allocates (bytes)
CUDA_CONTEXT_BYTES = 600 * 2**20
#: bytes per parameter while training with AdamW in fp32: weights, gradients, two moment
#: estimates, and the checkpoint's tensors as read
BYTES_PER_PARAMETER = 5 * 4


def training_bytes(parameters: int, batch: int, length: int, hidden: int, layers: int, heads: int,
                   value_bytes: int = 4) -> int:
    """Memory one fine-tuning step of a transformer takes (bytes): states of every parameter plus activations.

    ``parameters`` × 20 (fp32 weights, gradients, AdamW's two moments, the checkpoint as read)
    plus one step's activations (:func:`~seedscope.runners.finetune.footprint.activation_bytes`).
    A bound for LoRA too (its frozen weights need no gradient or moments).
    """
    return parameters * BYTES_PER_PARAMETER + activation_bytes(batch, length, hidden, layers, heads, value_bytes)


def recorded_peak(store: ExperimentStore, key: str) -> int | None:
    """The largest peak of ``key`` among the store's done runs (None when none recorded one)."""
    runs = store.runs()
    peaks = [t.get(key) for t, status in zip(runs["timings"], runs["status"]) if status == "done"]
    peaks = [int(p) for p in peaks if p]
    return max(peaks) if peaks else None


def available_memory() -> int | None:
    """Memory the system can still give out (``MemAvailable``, bytes); None where it is not known."""
    try:
        with open("/proc/meminfo") as info:
            for line in info:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def gib(n_bytes: float) -> str:
    return f"{n_bytes / 2**30:.1f} GiB"


def runs_that_fit(store: ExperimentStore, asked: int, gpus: Sequence[str], device: dict,
                  estimated: int | None = None) -> tuple[int, str | None]:
    """(runs to keep busy at once, a warning or None) for ``asked`` worker slots.

    The largest peak finished runs recorded decides; before any, ``estimated`` (the bytes of
    :func:`training_bytes`, None where no estimate exists: then K go as asked). ``device``
    holds ``gpu_total_bytes`` once a GPU worker has reported it.
    """
    peak = recorded_peak(store, PEAK_GPU if gpus else PEAK_RSS)
    if peak is None and estimated is not None:
        peak = estimated if gpus else estimated + PROCESS_BYTES
    if peak is None:
        return asked, None
    if gpus:
        total = device.get("gpu_total_bytes")
        if total is None:
            return asked, None
        per_gpu = asked // len(gpus)
        fit = max(1, int(total * HEADROOM // (peak + CUDA_CONTEXT_BYTES)))
        if fit >= per_gpu:
            return asked, None
        return fit * len(gpus), (f"{per_gpu} runs per GPU will not fit in {gib(total)}: a run peaked at "
                                 f"{gib(peak + CUDA_CONTEXT_BYTES)}; packing {fit} per GPU instead")
    free = available_memory()
    if free is None:
        return asked, None
    fit = max(1, 1 + int(free * HEADROOM // peak))  # one run's worker already holds its memory
    if fit >= asked:
        return asked, None
    return fit, (f"{asked} runs at once will not fit in memory: a run peaked at {gib(peak)} and {gib(free)} "
                 f"is free; running {fit} at once instead")


def estimated_peak(specs: Sequence[RunSpec]) -> int | None:
    """The largest :func:`training_bytes` among ``specs``' fine-tuning runs (None where none can be sized).

    In-context and meta-learning runs train no transformer and are not estimated; a model that
    cannot be sized here is left to its run, which reports why.
    """
    from seedscope.errors import SeedscopeError
    from seedscope.plan.runs import runner_of

    profiles = {(spec.model, json.dumps(spec.hparams, sort_keys=True, default=str)): spec
                for spec in specs if runner_of(spec.method) == "finetune"}
    if not profiles:
        return None
    from seedscope.runners.finetune.footprint import model_shape

    try:
        return max(training_bytes(**model_shape(spec)) for spec in profiles.values())
    except (SeedscopeError, AttributeError, ValueError):  # unknown, or a config without the usual names: no estimate
        return None
