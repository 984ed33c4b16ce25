"""Which way a plan runs soonest on this machine: one run after another, packed K at once, or fused K.

Each way's wall time comes from the same per-run estimates as ``--plan-only``'s table
(:mod:`seedscope.workflows.costing`: one short timed run per profile, or finished runs):

- **packed K** — the runs go to K workers, each taking the next run as it frees (longest
  first), so 8 equal runs at K = 4 are two waves. On a CPU each worker has ``cores // K``
  threads, and the per-run time is timed at that thread count. On a GPU the K runs share one
  device: each is assumed to run ``slowdown`` times slower beside the others, from what was
  measured (docs/how-to/gpu-cost.md): four MiniLM-sized runs (23 M parameters) kept their speed on an H100
  (4.0×), two RoBERTa-large-sized ones (355 M) gained nothing on an H200; between the two the
  slowdown is interpolated in the logarithm of the parameter count.
- **fused K** — up to K runs that differ only in their seeds trained as one stacked model in one
  process (``--fuse K``, :mod:`seedscope.executors.fused`; LoRA runs as K adapters over one
  shared base, passing it as few at a time as keep the group's peak memory within 1.5× one run's,
  :func:`~seedscope.runners.finetune.footprint.fused_per_pass`); offered when every run to do can
  be fused (see :func:`seedscope.executors.fused.check_fusable`). Each group's training takes its
  members' summed time divided by the speed-up *measured* here for its profile
  (:mod:`seedscope.workflows.fused_costing`: a short fused group against a short run alone, on this
  device), never more than the group's size; what is not training (setting up, evaluating) is not
  fused and counts whole.

``--parallel auto`` takes the way with the lowest estimate (ties: fewer at once).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import pandas as pd

from seedscope.plan import RunSpec
from seedscope.plan.runs import profile
from seedscope.runners.finetune.footprint import FUSED_LORA_MEMORY, fused_per_pass
from seedscope.store import ExperimentStore
from seedscope.workflows.costing import packed_wall, run_seconds
from seedscope.workflows.fused_costing import TIMED_STEPS, fused_speedup

#: parameter counts at which runs sharing a GPU were measured to keep their speed, and to gain nothing
SHARES_FREELY, SHARES_NOTHING = 25e6, 300e6


@dataclass(frozen=True)
class Way:
    """One way to run the plan, its estimated wall time (None: not available) and how it was reckoned."""

    name: str
    parallel: int
    seconds: float | None
    note: str
    fuse: int = 1

    @property
    def at_once(self) -> int:
        """Runs trained at once this way."""
        return self.parallel * self.fuse

    def applied(self, execution):
        """``execution`` (an :class:`~seedscope.executors.options.ExecutionOptions`) set to run this way."""
        return replace(execution, parallel=self.parallel, fuse=self.fuse)


def _crowding(parameters: int) -> float:
    """0 for a model that shares a GPU freely (25 M parameters or fewer), 1 from 300 M on, log-interpolated."""
    span = math.log(SHARES_NOTHING) - math.log(SHARES_FREELY)
    return min(1.0, max(0.0, (math.log(parameters) - math.log(SHARES_FREELY)) / span))


def gpu_slowdown(parallel: int, parameters: int | None) -> float:
    """How much slower each of ``parallel`` runs sharing one GPU is than alone (assumed; see the module)."""
    if parallel == 1:
        return 1.0
    if parameters is None:
        return float(parallel)  # nothing known: assume no gain
    return 1.0 + _crowding(parameters) * (parallel - 1)


def fused_way(specs: Sequence[RunSpec], timed: pd.DataFrame, fuse: int, speedup: Callable[[list[RunSpec]], float]
              ) -> Way:
    """The wall time of the runs to do fused ``fuse`` at a time (``timed``: their seconds alone and their training
    seconds, in plan order); ``speedup(group)`` measures a group's speed-up, once per profile."""
    from seedscope.errors import SeedscopeError
    from seedscope.executors.fused import check_fusable, fused_groups

    name = f"fused, --fuse {fuse}"
    todo = [spec for spec, to_do in zip(specs, timed["to_do"]) if to_do == 1]
    try:
        check_fusable(todo)
    except SeedscopeError as error:
        return Way(name, 1, None, f"not available for this plan: {error}", fuse)
    seconds = {spec.run_id: (total, train) for spec, total, train in zip(specs, timed["seconds"],
                                                                          timed["train_seconds"])}
    groups = fused_groups(todo, fuse)
    measured: dict[str, float] = {}
    for group in groups:
        if profile(group[0]) not in measured:
            measured[profile(group[0])] = speedup(group)
    wall = 0.0
    for group in groups:
        gain = min(measured[profile(group[0])], len(group))
        for total, train in (seconds[spec.run_id] for spec in group):
            train = total if math.isnan(train) else min(train, total)  # a finished run stored before it was recorded
            wall += total - train + train / gain
    rates = " or ".join(f"{gain:.2f}×" for gain in sorted(set(measured.values())))
    passes = [fused_per_pass(group[0], len(group)) for group in groups]
    bounded = sorted({per_pass for group, per_pass in zip(groups, passes) if per_pass < len(group)})
    memory = (f"; LoRA members pass the base {' or '.join(map(str, bounded))} at a time, so that the group's peak "
              f"memory stays within {FUSED_LORA_MEMORY}× one run's" if bounded else "")
    return Way(name, 1, wall, f"{len(groups)} group(s) of up to {fuse}, training at {rates} the throughput of one "
               f"after another (measured here, {TIMED_STEPS} steps each){memory}", fuse)


def candidates(cores: int, gpus: int) -> list[int]:
    """The K that ``--parallel auto`` weighs: 1, 2, 4 and 8 per GPU; on a CPU 1 and one run per core."""
    return [1, 2, 4, 8] if gpus else sorted({1, cores})


def timed_as(parallel: int, gpus: int) -> int:
    """The K whose threads time a run of packed K: on a GPU the runs are timed once (as K = 1)."""
    return 1 if gpus else parallel


def ways(specs: Sequence[RunSpec], data_dir, parallels: Sequence[int], *, gpus: int, parameters: int | None,
         store: ExperimentStore | None = None, on_calibrate: Callable[[RunSpec], None] | None = None,
         timed: dict[int, pd.DataFrame] | None = None, fuse: int | None = None,
         on_fuse_timing: Callable[[RunSpec, int], None] | None = None) -> list[Way]:
    """The estimated wall time of each K in ``parallels`` (1: one after another), then fused at ``fuse`` (default:
    the largest K, when it is more than 1); ``on_fuse_timing(spec, K)`` before a profile's fused group is timed.

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
    fuse = fuse or max(parallels)
    if fuse > 1:
        if 1 not in timed:
            timed[1] = run_seconds(specs, data_dir, parallel=1, store=store, on_calibrate=on_calibrate)

        def measured(group: list[RunSpec]) -> float:
            if on_fuse_timing:
                on_fuse_timing(group[0], len(group))
            return fused_speedup(group, data_dir)

        found.append(fused_way(specs, timed[1], fuse, measured))
    return found


def pick(found: Sequence[Way]) -> Way:
    """The available way with the lowest estimate (ties: the fewest runs at once, then not fused)."""
    return min((way for way in found if way.seconds is not None),
               key=lambda way: (round(way.seconds, 6), way.at_once, way.fuse))


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
