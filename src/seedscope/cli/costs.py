"""``--plan-only`` of ``sweep`` and ``factors run``: the plan's size and cost, before anything is stored."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from rich.console import Console


def print_cost(specs: Sequence, data_dir: Optional[Path], console: Console, *, parallel: int = 1,
               out: Optional[Path] = None) -> None:
    """Runs and training example-epochs per task, and the wall time estimated from one short run per profile.

    A directory ``out`` that already holds finished runs of the plan (a sweep to resume) lends
    their durations instead, and only the runs not done are counted.
    """
    from seedscope.report.tables import to_rich
    from seedscope.store import ExperimentStore
    from seedscope.workflows.costing import duration_text, estimate

    store = ExperimentStore.open(out) if out is not None and ExperimentStore.is_store(out) else None
    table = estimate(specs, data_dir, parallel=parallel, store=store,
                     on_calibrate=lambda spec: console.print(f"timing a short run of {spec.task} ({spec.model_name}, "
                                                             f"{spec.method}) …", highlight=False))
    shown = table.assign(example_epochs=table["example_epochs"].map(lambda n: f"{n:,.0f}"),
                         seconds=table["seconds"].map(duration_text),
                         wall_seconds=table["wall_seconds"].map(duration_text))
    at = f"--parallel {parallel}" if parallel > 1 else "one run after another"
    shown.columns = ["runs", "to do", "training example-epochs", "time one after another",
                     "calibrated from", f"wall time ({at})"]
    console.print(to_rich(shown, f"Plan: {len(specs)} runs; the cost on this machine"))
    total = table.loc["total"]
    console.print(f"estimated wall time: {duration_text(total['wall_seconds'])} ({at}, this machine)", highlight=False)
