"""How many runs fit in memory at once, from the peak that finished runs recorded.

Every run records its process's peak resident memory (and, on a GPU, the peak memory torch
allocated there) in its timings (:func:`seedscope.runners.run`). Before a packing executor
puts K runs side by side, it takes the largest recorded peak — the first run's, run alone,
or those of finished runs when a sweep is resumed — and lowers K to what the machine holds.
"""

from __future__ import annotations

from typing import Sequence

from seedscope.store import ExperimentStore

#: timings keys of a run's peak memory, in bytes
PEAK_RSS, PEAK_GPU = "peak_memory_bytes", "peak_gpu_memory_bytes"
#: share of the free memory runs may take (the rest: the system, the parent, fragmentation)
HEADROOM = 0.9
#: what a process's CUDA context takes on its GPU besides what torch allocates (bytes)
CUDA_CONTEXT_BYTES = 600 * 2**20


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
                  measured: bool) -> tuple[int, str | None]:
    """(runs to keep busy at once, a warning or None) for ``asked`` worker slots.

    Until a run has measured its peak, one run goes alone (``measured`` false); a run that
    measured nothing (it failed early, or a runner that does not record) packs as asked.
    ``device`` holds ``gpu_total_bytes`` once a GPU worker has reported it.
    """
    peak = recorded_peak(store, PEAK_GPU if gpus else PEAK_RSS)
    if peak is None:
        return (asked if measured else 1), None
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
