"""``seedscope demo`` ends by saying what to run next: the report of its store, and where that report will be."""

from __future__ import annotations

import io
import shutil
import shlex

from rich.console import Console

from seedscope.cli.demo import print_took, report_path

from ..conftest import REPO


def test_the_demo_ends_with_the_report_command_and_where_the_report_will_be(tmp_path, cli):
    store = tmp_path / "my demo"  # a space: the printed command must still run as printed
    shutil.copytree(REPO / "examples" / "demo-store", store)
    console = Console(file=io.StringIO(), width=200)
    print_took(0.0, store, console)
    lines = console.file.getvalue().splitlines()
    assert lines[-2] == f"next: seedscope report {shlex.quote(str(store))} --html {shlex.quote(str(tmp_path / 'my demo-report.html'))}"
    assert lines[-1].strip().startswith(f"then open {tmp_path / 'my demo-report.html'} in a browser")
    code, out, err = cli(shlex.split(lines[-2].removeprefix("next: seedscope ")))
    assert code == 0, err
    assert report_path(store).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert sorted(p.name for p in store.iterdir()) == ["catalog.sqlite", "predictions"]  # the store holds its runs only
