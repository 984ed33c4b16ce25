"""Which way a plan runs soonest on this machine: one run after another, packed K at once, or fused K.

Each way's wall time comes from the same per-run estimates as ``--plan-only``'s table
(:mod:`seedscope.workflows.costing`: one short timed run per profile, or finished runs):

- **packed K** — the runs go to K workers, each taking the next run as it frees (longest
  first), so 8 equal runs at K = 4 are two waves. On a CPU each worker has ``cores // K``
  threads, and the per-run time is timed at that thread count. On a GPU the K runs share one
  device: each is assumed to run ``slowdown`` times slower beside the others, from what was
  measured (docs/gpu.md): four MiniLM-sized runs (23 M parameters) kept their speed on an H100
  (4.0×), two RoBERTa-large-sized ones (355 M) gained nothing on an H200; between the two the
  slowdown is interpolated in the logarithm of the parameter count.
- **fused K** — K seeds trained as one stacked model; not built yet, so never picked.

``--parallel auto`` takes the way with the lowest estimate (ties: fewer at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Sequence

import pandas as pd

from seedscope.plan import RunSpec
from seedscope.store import ExperimentStore
from seedscope.workflows.costing import packed_wall, run_seconds

#: parameter counts at which runs sharing a GPU were measured to keep their speed, and to gain nothing
SHARES_FREELY, SHARES_NOTHING = 25e6, 300e6
FUSED_MISSING = "not available for this plan: fused seeds (--fuse K) are not built yet"


@dataclass(frozen=True)
class Way:
    """One way to run the plan, its estimated wall time (None: not available) and how it was reckoned."""

    name: str
    parallel: int
    seconds: float | None
    note: str


def gpu_slowdown(parallel: int, parameters: int | None) -> float:
    """How much slower each of ``parallel`` runs sharing one GPU is than alone (assumed; see the module)."""
    if parallel == 1:
        return 1.0
    if parameters is None:
        return float(parallel)  # nothing known: assume no gain
    span = math.log(SHARES_NOTHING) - math.log(SHARES_FREELY)
    share = min(1.0, max(0.0, (math.log(parameters) - math.log(SHARES_FREELY)) / span))
    return 1.0 + share * (parallel - 1)


def candidates(cores: int, gpus: int) -> list[int]:
    """The K that ``--parallel auto`` weighs: 1, 2, 4 and 8 per GPU; on a CPU 1 and one run per core."""
    return [1, 2, 4, 8] if gpus else sorted({1, cores})


def timed_as(parallel: int, gpus: int) -> int:
    """The K whose threads time a run of packed K: on a GPU the runs are timed once (as K = 1)."""
    return 1 if gpus else parallel


def ways(specs: Sequence[RunSpec], data_dir, parallels: Sequence[int], *, gpus: int, parameters: int | None,
         store: ExperimentStore | None = None, on_calibrate: Callable[[RunSpec], None] | None = None,
         timed: dict[int, pd.DataFrame] | None = None) -> list[Way]:
    """The estimated wall time of each K in ``parallels`` (1: one after another), then fused at the largest K (> 1).

    ``timed`` keeps :func:`~seedscope.workflows.costing.run_seconds`' rows per :func:`timed_as` K for the caller.
    """
    found, timed = [], ({} if timed is None else timed)
    keys = list(dict.fromkeys(timed_as(parallel, gpus) for parallel in parallels))
    if len(keys) > 1 and not timed:  # the process's first short runs pay the libraries' first use: not one K's cost
        run_seconds(specs, data_dir, parallel=keys[-1], store=store, on_calibrate=on_calibrate)
    for parallel in parallels:
        key = timed_as(parallel, gpus)
        if key not in timed:
            timed[key] = run_seconds(specs, data_dir, parallel=key, store=store, on_calibrate=on_calibrate)
        todo = timed[key].loc[timed[key]["to_do"] == 1, "seconds"].tolist()
        slowdown = gpu_slowdown(parallel, parameters) if gpus else 1.0
        workers = parallel * max(1, gpus)
        waves = math.ceil(len(todo) / workers) if todo else 0
        if parallel == 1:
            found.append(Way("one after another", 1, packed_wall(todo, 1), f"{len(todo)} runs"))
        else:
            where = (f"sharing a GPU, each assumed {slowdown:.2f}× slower" if gpus
                     else f"{max(1, _cores() // parallel)} threads each")
            found.append(Way(f"packed, --parallel {parallel}", parallel, packed_wall(todo, workers, slowdown),
                             f"{waves} wave(s) of up to {workers}, {where}"))
    if max(parallels) > 1:
        found.append(Way(f"fused, --fuse {max(parallels)}", max(parallels), None, FUSED_MISSING))
    return found


def pick(found: Sequence[Way]) -> Way:
    """The available way with the lowest estimate (ties: the fewest runs at once)."""
    return min((way for way in found if way.seconds is not None), key=lambda way: (round(way.seconds, 6), way.parallel))


def largest_model(specs: Sequence[RunSpec]) -> int | None:
    """Parameters of the largest fine-tuned model among ``specs`` (None: none is fine-tuned, or none can be sized)."""
    from seedscope.errors import SeedscopeError
    from seedscope.plan.runs import runner_of
    from seedscope.runners.finetune.footprint import model_shape

    try:
        sizes = [model_shape(spec)["parameters"] for spec in specs if runner_of(spec.method) == "finetune"]
    except (SeedscopeError, AttributeError, ValueError):  # unknown, or a config without the usual names
        return None
    return max(sizes, default=None)


def _cores() -> int:
    from seedscope.executors.packing import cpu_cores

    return cpu_cores()
