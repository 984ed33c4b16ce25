"""Atomic writes: whole files or none, and new files get the mode the user's umask gives, as ``open()`` would."""

from __future__ import annotations

import os
import stat

import pytest

from seedscope.atomic import atomic_path, atomic_write_text, discard, move_into_place, staged_dir, staged_file


@pytest.fixture(params=[0o022, 0o077, 0o002])
def umask(request):
    old = os.umask(request.param)
    yield request.param
    os.umask(old)


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_written_files_and_folders_get_the_umask_mode(tmp_path, umask):
    atomic_write_text(tmp_path / "a.txt", "x")
    with atomic_path(tmp_path / "b.bin") as tmp:
        tmp.write_bytes(b"y")
    move_into_place(staged_file(tmp_path / "c.html", b"z"), tmp_path / "c.html")
    folder = staged_dir(tmp_path / "figs")
    (folder / "f.png").write_bytes(b"png")
    move_into_place(folder, tmp_path / "figs")
    assert {p.name: _mode(p) for p in tmp_path.iterdir()} == {
        "a.txt": 0o666 & ~umask, "b.bin": 0o666 & ~umask, "c.html": 0o666 & ~umask, "figs": 0o777 & ~umask}
    assert (tmp_path / "a.txt").read_text() == "x" and (tmp_path / "figs" / "f.png").read_bytes() == b"png"


def test_a_failed_write_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), atomic_path(tmp_path / "a.txt") as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    discard(staged_file(tmp_path / "b.txt", b"x"))
    discard(staged_dir(tmp_path / "c"))
    assert list(tmp_path.iterdir()) == []


def test_a_temporary_name_taken_is_drawn_again(tmp_path, monkeypatch):
    import secrets

    draws = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(draws))
    first, second = staged_file(tmp_path / "x", b"1"), staged_file(tmp_path / "x", b"2")
    assert (first.name, second.name) == (".x.aaaa.tmp", ".x.bbbb.tmp") and first.read_bytes() == b"1"
