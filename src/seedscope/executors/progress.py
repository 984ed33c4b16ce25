"""A Rich progress display for sweeps: one bar for runs (with ETA), one for the current run's steps."""

from __future__ import annotations

from rich.console import Console
from rich.progress import (
    BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn, TimeRemainingColumn,
)

from seedscope.plan import RunSpec


class RichProgress:
    """Implements :class:`seedscope.executors.base.Progress` on a terminal."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.bars = Progress(
            TextColumn("{task.description}", style="bold"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self.steps: dict[str, TaskID] = {}
        self.runs: TaskID | None = None

    def start(self, total_runs: int) -> None:
        self.bars.start()
        self.runs = self.bars.add_task("runs", total=total_runs)

    def run_started(self, spec: RunSpec) -> None:
        self.steps[spec.run_id] = self.bars.add_task(f"  {spec.run_id}", total=None)

    def step(self, spec: RunSpec, done: int, total: int) -> None:
        if spec.run_id not in self.steps:
            self.run_started(spec)
        self.bars.update(self.steps[spec.run_id], completed=done, total=total)

    def run_finished(self, spec: RunSpec, ok: bool) -> None:
        task = self.steps.pop(spec.run_id, None)
        if task is not None:
            self.bars.remove_task(task)
        if not ok:
            self.console.print(f"[red]run {spec.run_id} failed[/] (recorded; the sweep goes on)", highlight=False)
        self.bars.advance(self.runs)

    def stop(self) -> None:
        self.bars.stop()
