"""The Rich progress display: run and step bars, failed runs announced."""

import io

from rich.console import Console

from seedscope.progress import RunProgress
from seedscope.plan.seeds import FactorSeeds
from seedscope.plan import RunSpec


def test_runs_and_steps_are_shown_and_failures_announced():
    console = Console(file=io.StringIO(), width=120, force_terminal=False)
    progress = RunProgress(console)
    first, second = (RunSpec("rte", "m", FactorSeeds.tied(s)) for s in (1, 2))
    progress.start(2)
    progress.run_started(first)
    progress.step(first, 3, 10)
    assert progress.bars.tasks[1].completed == 3 and progress.bars.tasks[1].total == 10
    progress.run_finished(first, ok=True)
    progress.step(second, 1, 4)  # a remote run may report steps before its start is seen
    progress.run_finished(second, ok=False)
    progress.stop()
    assert progress.bars.tasks[0].completed == 2 and len(progress.bars.tasks) == 1
    assert "run rte__m__full__s2 failed" in console.file.getvalue()
