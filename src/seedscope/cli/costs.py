"""``--plan-only`` of ``sweep`` and ``factors run``: the plan's size and cost, before anything is stored,
and ``--parallel auto``'s pick among the ways to run it."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from rich.console import Console

from seedscope.cli.outputs import print_table
from seedscope.cli.run_options import AUTO, parallel_number


def print_cost(specs: Sequence, data_dir: Optional[Path], console: Console, *, parallel: int | str = 1,
               out: Optional[Path] = None, fuse: int = 1):
    """Runs and training example-epochs per task, the wall time of each way to run them, the H100-hours the plan's
    model FLOPs need (:func:`~seedscope.workflows.costing.h100_hours`), and the pick; return it
    (a :class:`~seedscope.workflows.run_choice.Way`: its ``parallel`` and ``fuse``).

    Each profile is timed by one short run (a directory ``out`` holding finished runs of the
    plan lends their durations instead, and only the runs not done are counted). The ways are
    one run after another, packed at ``parallel`` and fused at ``fuse`` (by default at ``parallel``;
    with ``auto``: every K that :func:`~seedscope.workflows.run_choice.candidates` weighs).
    """
    from seedscope.report.tables import to_rich
    from seedscope.store import ExperimentStore
    from seedscope.workflows.costing import duration_text, h100_hours, task_table
    from seedscope.workflows.run_choice import pick, timed_as

    store = ExperimentStore.open(out) if out is not None and ExperimentStore.is_store(out) else None
    found, timed, gpus, shown_k = _ways(specs, data_dir, console, parallel, store, fuse)
    table = task_table(timed[timed_as(shown_k, gpus)], shown_k)
    shown = table.assign(example_epochs=table["example_epochs"].map(lambda n: f"{n:,.0f}"),
                         seconds=table["seconds"].map(duration_text),
                         wall_seconds=table["wall_seconds"].map(duration_text))
    at = f"--parallel {shown_k}" if shown_k > 1 else "one run after another"
    shown.columns = ["runs", "to do", "training example-epochs", "time one after another",
                     "calibrated from", f"wall time ({at})"]
    print_table(console, to_rich(shown, f"Plan: {len(specs)} runs; the cost on this machine"))
    console.print("estimated wall time (this machine):", highlight=False)
    for way in found:
        figure = duration_text(way.seconds) if way.seconds is not None else "—"
        console.print(f"  {way.name}: {figure} ({way.note})", highlight=False, markup=False)
    priced = h100_hours(timed[timed_as(shown_k, gpus)])
    if priced is not None:
        console.print(f"H100-hours ≈ {priced[0]:,.1f}, one run after another ({priced[1]})", highlight=False,
                      markup=False)
    chosen = pick(found)
    console.print(f"would pick: {chosen.name}{' (--parallel auto)' if parallel == AUTO else ''}", highlight=False)
    return chosen


def _ways(specs, data_dir, console: Console, parallel: int | str, store, fuse: int):
    """(the ways, the timed rows per K, the number of GPUs, the K the task table shows)."""
    from seedscope.executors.packing import cpu_cores, visible_gpus
    from seedscope.workflows.run_choice import candidates, largest_model, ways

    gpus = len(visible_gpus())
    asked = None if parallel == AUTO else (parallel if isinstance(parallel, int) else parallel_number(parallel))
    parallels = candidates(cpu_cores(), gpus) if asked is None else sorted({1, asked})
    timed: dict = {}
    found = ways(specs, data_dir, parallels, gpus=gpus, parameters=largest_model(specs), store=store, timed=timed,
                 fuse=fuse if fuse > 1 else None,
                 on_calibrate=lambda spec: console.print(f"timing a short run of {spec.task} ({spec.model_name}, "
                                                         f"{spec.method}) …", highlight=False),
                 on_fuse_timing=lambda spec, k: console.print(f"timing {k} fused runs of {spec.task} "
                                                              f"({spec.model_name}, {spec.method}) against one …",
                                                              highlight=False))
    return found, timed, gpus, max(parallels) if asked is None else asked
