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


def test_what_the_runs_wait_on_is_shown_beside_their_bars_and_as_a_line_before_they_start():
    from seedscope.progress import say_status, status_shown

    console = Console(file=io.StringIO(), width=200, force_terminal=False)
    progress = RunProgress(console)
    run = RunSpec("rte", "m", FactorSeeds.tied(1))
    say_status("said to nobody")  # no display: nothing happens
    with status_shown(progress):
        say_status("waiting for the server at http://h/v1 to answer the study's first request: 3 s")
        say_status("waiting … 4 s")  # within a few seconds of the last line: not printed again
        progress.start(1)
        progress.run_started(run)
        say_status("2 request(s) in flight at http://h/v1, the oldest for 12 s; 1 retried so far (last: 503)")
        assert progress.bars.tasks[1].description == ("  rte__m__full__s1  (2 request(s) in flight at http://h/v1, the "
                                                      "oldest for 12 s; 1 retried so far (last: 503))")
        say_status(None)
        assert progress.bars.tasks[1].description == "  rte__m__full__s1"
        progress.run_finished(run, ok=True)
        progress.stop()
    printed = console.file.getvalue()
    assert "the study's first request: 3 s" in printed and "4 s" not in printed and "said to nobody" not in printed
