"""What fusing K seeds gains on this machine, measured: a short fused group's steps against one run's.

``--plan-only`` and ``--parallel auto`` price fused K (:mod:`seedscope.workflows.run_choice`) by
this figure, not by a rule of thumb of the model's size: how much a fused step gains depends on
the device, the model, the batch and the sequence lengths (a RoBERTa-large-sized step of 10 short
sentences leaves a GPU as idle as a MiniLM-sized one). For a profile's first group, one run alone
and the group fused (``--fuse K``, a LoRA group passing its members through the base as it would)
each train :data:`TIMED_STEPS` optimiser steps in this process. The first step of each is left out
(first use of kernels, the allocator, attention plans), so the figure compares steady steps:

    speed-up = K × (seconds per step alone) / (seconds per fused step)

It covers training only: evaluation is not fused (each member predicts with its own ``Trainer``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec

#: optimiser steps each timed run trains (the first is left out of the figure)
TIMED_STEPS = 6


def steady_step_seconds(train: Callable[[Callable[[int], None]], object]) -> float:
    """Seconds per optimiser step after the first, of ``train(report)``, which calls ``report(steps_done)`` after
    each optimiser step (and may call it with 0 before the first)."""
    stamps: dict[int, float] = {}
    train(lambda done: stamps.setdefault(done, time.perf_counter()))
    steps = sorted(done for done in stamps if done >= 1)
    if len(steps) < 2:
        raise SeedscopeError(f"a timed run took {len(steps)} optimiser step(s), too few to time a step after the first")
    return (stamps[steps[-1]] - stamps[steps[0]]) / (steps[-1] - steps[0])


def timed_spec(spec: RunSpec) -> RunSpec:
    """``spec`` with its training cut to :data:`TIMED_STEPS` optimiser steps."""
    return RunSpec(spec.task, spec.model, spec.seeds, spec.method, {**spec.hparams, "max_steps": TIMED_STEPS},
                   spec.model_name, spec.tag)


def fused_speedup(group: Sequence[RunSpec], data_dir) -> float:
    """The group's members fused against one after another, in training throughput (see the module)."""
    from seedscope.runners import run, run_fused

    timed = [timed_spec(spec) for spec in group]
    directory = None if data_dir is None else str(data_dir)
    alone = steady_step_seconds(lambda report: run(timed[0], directory, on_step=lambda done, total: report(done)))
    together = steady_step_seconds(lambda report: run_fused(timed, directory,
                                                            on_step=lambda spec, done, total: report(done)))
    return len(group) * alone / together
