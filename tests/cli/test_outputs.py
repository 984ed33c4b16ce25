"""Output files: refused before any work when impossible, written atomically otherwise."""

from __future__ import annotations

import io
import os
import signal

import pandas as pd
import pytest
from rich.console import Console

from seedscope.cli.outputs import (
    PIPE_WIDTH,
    check_outputs,
    output_console,
    parse_int_list,
    print_table,
    resumable,
    write_outputs,
)
from seedscope.errors import Interrupted, SeedscopeError
from seedscope.report.tables import to_rich


def test_check_outputs(tmp_path):
    check_outputs(tmp_path / "a.json", None, tmp_path / "b.md")
    with pytest.raises(SeedscopeError, match="is a folder"):
        check_outputs(tmp_path)
    with pytest.raises(SeedscopeError, match="same file"):
        check_outputs(tmp_path / "a.json", tmp_path / "x" / ".." / "a.json")


def test_write_outputs(tmp_path):
    console = Console(file=io.StringIO())
    write_outputs({tmp_path / "new" / "a.txt": "hello\n"}, console)
    assert (tmp_path / "new" / "a.txt").read_text() == "hello\n"
    assert "wrote" in console.file.getvalue()
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(SeedscopeError, match="cannot write"):
        write_outputs({blocker / "a.txt": "x"}, console)


def test_parse_int_list():
    assert parse_int_list(None, "--seeds", "1,2") is None
    assert parse_int_list("42, 52,62,", "--seeds", "1,2") == [42, 52, 62]
    for text in ("4x,5", ",", " "):  # a list with no number in it is refused, not read as []
        with pytest.raises(SeedscopeError, match=r"--seeds takes comma-separated whole numbers, e.g. 1,2"):
            parse_int_list(text, "--seeds", "1,2")


def test_tables_written_to_a_pipe_are_not_cropped(capsys):
    """Piped, a command prints 80 columns; a table whose values do not fit is printed whole, wider, never cropped."""
    console = output_console()
    assert not console.is_terminal and console.width == PIPE_WIDTH == 80
    wide = pd.DataFrame({"first column": ["x" * 60], "second column": ["y" * 60]})
    print_table(console, to_rich(wide))  # 120+ characters wide: at 80 columns Rich would crop the second column
    printed = capsys.readouterr().out  # a long text folds inside its cell: every character is there, none cut off
    assert printed.count("y") == 60 and printed.count("x") == 60
    assert all(line.endswith(("┓", "┃", "┩", "│", "┘")) for line in printed.splitlines())
    numbers = pd.DataFrame({f"column {i}": [0.123456] for i in range(12)})  # values never shrink: wider than 80
    print_table(console, to_rich(numbers))
    printed = capsys.readouterr().out
    assert printed.count("0.1235") == 12 and max(len(line) for line in printed.splitlines()) > 80
    print_table(console, to_rich(pd.DataFrame({"a": [0.5], "b": ["text"]})))  # a narrow one stays as it is
    assert max(len(line) for line in capsys.readouterr().out.splitlines()) <= 80


def test_a_header_wraps_between_its_words_never_inside_one(capsys):
    console = output_console()
    headers = {f"column {i}": [1] for i in range(8)} | {"training example-epochs": [480], "time one after another": [2]}
    print_table(console, to_rich(pd.DataFrame(headers)))
    printed = capsys.readouterr().out
    assert "example-epochs" in printed and "another" in printed and "training" in printed


class _CtrlCInAFinalizer:
    """A Ctrl-C that lands while the garbage collector runs a ``__del__``: Python prints and ignores it."""

    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10_000):  # the handler runs between bytecodes, here, inside the finalizer
            pass


def test_a_ctrl_c_in_a_finalizer_interrupts_the_work_after_it_without_a_traceback(tmp_path, capfd):
    import time

    before = signal.getsignal(signal.SIGINT)  # Python's default, or SIG_IGN under a shell's background job
    started = time.monotonic()
    with pytest.raises(Interrupted, match="--resume"):
        with resumable(tmp_path):
            _CtrlCInAFinalizer()  # collected at once
            while time.monotonic() - started < 30:  # a run goes on: the Ctrl-C must stop it, not its end
                time.sleep(0.01)
    assert time.monotonic() - started < 5
    assert signal.getsignal(signal.SIGINT) is before  # restored after the block
    err = capfd.readouterr().err
    assert "Exception ignored" not in err and "Traceback" not in err, err


def test_a_ctrl_c_in_a_finalizer_at_the_block_s_end_still_interrupts(tmp_path):
    with pytest.raises(Interrupted, match="--resume"):
        with resumable(tmp_path):
            _CtrlCInAFinalizer()  # the block ends before the Ctrl-C is sent again: it is remembered


def test_a_ctrl_c_interrupts_and_a_quiet_block_does_not(tmp_path):
    with pytest.raises(Interrupted, match="finished runs are kept"):
        with resumable(tmp_path):
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10_000):
                pass
    with resumable(tmp_path):
        pass
