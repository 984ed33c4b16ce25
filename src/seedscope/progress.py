"""The one progress display of seedscope (Rich, on stderr): runs of a sweep, stages of a report, loops.

* :class:`RunProgress` — a sweep: one bar for runs (with ETA), one for the current run's steps;
* :func:`stage_progress` — a callback ``(what, done, total)`` for work in named stages (a report);
* :func:`steps` — wrap a loop's items (a transient bar; nothing when disabled);
* :func:`say_status` — what the work is waiting on (a server's requests in flight, its retries), shown beside the
  run's bar by the display that :func:`status_shown` names, or as a line now and then before the bars start.
"""

from __future__ import annotations

import threading
import time
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
#: the displays told of a wait (:func:`say_status`), innermost last
_shown: list[Callable[[str | None], None]] = []
#: seconds between two status lines printed before the bars start (the first wait of a study)
STATUS_LINE_SECONDS = 10.0


def say_status(text: str | None) -> None:
    """Tell the display what the work is waiting on now (None: nothing); said nowhere without a display."""
    for show in list(_shown):
        show(text)


@contextmanager
def status_shown(progress) -> Iterator[None]:
    """Inside, :func:`say_status` reaches ``progress`` (a display with a ``status`` method; others are passed by)."""
    show = getattr(progress, "status", None)
    if show is None or show in _shown:
        yield
        return
    _shown.append(show)
    try:
        yield
    finally:
        _shown.remove(show)


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
        self.waiting: str | None = None  # what the current runs wait on (say_status), shown beside their bars
        self._said = -STATUS_LINE_SECONDS
        self._lock = threading.Lock()

    def start(self, total_runs: int) -> None:
        self.bars.start()
        self.runs = self.bars.add_task("runs", total=total_runs)

    def run_started(self, spec) -> None:
        self.steps[spec.run_id] = self.bars.add_task(self._described(spec.run_id), total=None)

    def status(self, text: str | None) -> None:
        """What the runs wait on, beside their bars; before the bars start, a line at most every few seconds."""
        with self._lock:
            self.waiting = text
            if self.runs is None:
                if text and time.monotonic() - self._said >= STATUS_LINE_SECONDS:
                    self._said = time.monotonic()
                    self.console.print(text, highlight=False, markup=False)
                return
            for run_id, task in list(self.steps.items()):
                self.bars.update(task, description=self._described(run_id))

    def _described(self, run_id: str) -> str:
        return f"  {run_id}" + (f"  ({self.waiting})" if self.waiting else "")

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
        self.runs = None
