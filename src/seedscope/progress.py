"""The one progress display of seedscope (Rich, on stderr): runs of a sweep, stages of a report, loops.

* :class:`RunProgress` — a sweep: one bar for runs (with ETA), one for the current run's steps;
* :func:`stage_progress` — a callback ``(what, done, total)`` for work in named stages (a report);
* :func:`steps` — wrap a loop's items (a transient bar; nothing when disabled).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterable, Iterator, TypeVar

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

T = TypeVar("T")


def _bars(console: Console | None = None, *, eta: bool = False, transient: bool = False) -> Progress:
    columns = [TextColumn("{task.description}", style="bold", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn()]
    if eta:
        columns += [TextColumn("ETA"), TimeRemainingColumn()]
    return Progress(*columns, console=console or Console(stderr=True), transient=transient)


def steps(items: Iterable[T], description: str, *, enabled: bool = True) -> Iterator[T]:
    """Yield ``items`` while a transient bar counts them (no bar when ``enabled`` is false)."""
    items = list(items)
    if not enabled:
        yield from items
        return
    with _bars(transient=True) as bars:
        task = bars.add_task(description, total=len(items))
        for item in items:
            yield item
            bars.advance(task)


@contextmanager
def stage_progress(console: Console | None = None) -> Iterator[Callable[[str, int, "int | None"], None]]:
    """A transient bar driven by a ``(what is being done, steps done, total steps or None)`` callback."""
    with _bars(console, transient=True) as bars:
        task = bars.add_task("starting", total=None)

        def update(what: str, done: int, total: int | None) -> None:
            bars.update(task, description=what, completed=done, total=total)

        yield update


class RunProgress:
    """What executors report (:class:`seedscope.executors.base.Progress`), shown on a terminal."""

    def __init__(self, console: Console | None = None):
        self.console = console or Console(stderr=True)
        self.bars = _bars(self.console, eta=True)
        self.steps: dict[str, TaskID] = {}
        self.runs: TaskID | None = None

    def start(self, total_runs: int) -> None:
        self.bars.start()
        self.runs = self.bars.add_task("runs", total=total_runs)

    def run_started(self, spec) -> None:
        self.steps[spec.run_id] = self.bars.add_task(f"  {spec.run_id}", total=None)

    def step(self, spec, done: int, total: int) -> None:
        if spec.run_id not in self.steps:
            self.run_started(spec)
        self.bars.update(self.steps[spec.run_id], completed=done, total=total)

    def run_finished(self, spec, ok: bool) -> None:
        task = self.steps.pop(spec.run_id, None)
        if task is not None:
            self.bars.remove_task(task)
        if not ok:
            self.console.print(f"[red]run {escape(spec.run_id)} failed[/] (recorded; the sweep goes on)", highlight=False)
        self.bars.advance(self.runs)

    def stop(self) -> None:
        self.bars.stop()
