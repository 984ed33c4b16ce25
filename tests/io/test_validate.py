"""The reading discipline itself: what may be opened, typed JSON access, checked archive members."""

from __future__ import annotations

import os
import zipfile

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io.validate import check_input, expect, member, read_text, zip_members


def test_only_regular_files_and_folders_are_opened(tmp_path):
    os.mkfifo(tmp_path / "pipe.csv")
    with pytest.raises(SeedscopeError, match=r"pipe.csv is a named pipe \(FIFO\), not a file"):
        check_input(tmp_path / "pipe.csv")
    with pytest.raises(SeedscopeError, match=r"null is a device"):
        check_input(type(tmp_path)("/dev/null"))
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    with pytest.raises(SeedscopeError, match=r"loop is a symbolic link loop"):
        check_input(tmp_path / "loop")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    with pytest.raises(SeedscopeError, match=r"dangling is a symbolic link to .*nowhere, which does not exist"):
        check_input(tmp_path / "dangling")
    folder = tmp_path / "runs"
    folder.mkdir()
    os.mkfifo(folder / "seed1.csv")
    with pytest.raises(SeedscopeError, match=r"runs/seed1.csv is a named pipe"):
        check_input(folder)  # a folder's pipe is named, never skipped or opened


def test_text_drops_a_byte_order_mark_and_names_other_encodings(tmp_path):
    (tmp_path / "a.jsonl").write_bytes("\ufeff{}".encode())
    assert read_text(tmp_path / "a.jsonl") == "{}"
    (tmp_path / "b.jsonl").write_text("{}", encoding="utf-16")
    with pytest.raises(SeedscopeError, match=r"b.jsonl is not UTF-8 text"):
        read_text(tmp_path / "b.jsonl")


def test_typed_access_names_where_and_what():
    record = {"id": None, "scores": [], "epoch": True, "value": float("inf")}
    with pytest.raises(SeedscopeError, match=r"^log.json sample 3: 'scores' is a list, expected an object$"):
        member(record, "scores", "an object", "log.json sample 3")
    with pytest.raises(SeedscopeError, match=r"'id' is null"):
        member(record, "id", "a string", "x")
    assert member(record, "id", "a string", "x", default="") == ""
    with pytest.raises(SeedscopeError, match=r"'epoch' is true or false, expected an integer"):
        member(record, "epoch", "an integer", "x")
    with pytest.raises(SeedscopeError, match=r"'value' is inf, not a finite number"):
        member(record, "value", "a number", "x")
    assert expect(3, "a number", "x") == 3


def test_every_archive_member_is_checked(tmp_path):
    path = tmp_path / "a.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        archive.writestr("one.json", "[1, 2, 3]")
    assert zip_members(path) == {"one.json": b"[1, 2, 3]"}
    data = path.read_bytes().replace(b"[1, 2, 3]", b"[1, 2, 4]")  # stored: the change reaches the data, not the CRC
    path.write_bytes(data)
    with pytest.raises(SeedscopeError, match=r"a.zip: archive member one.json is damaged"):
        zip_members(path)
    path.write_bytes(b"not a zip")
    with pytest.raises(SeedscopeError, match=r"a.zip is not a zip archive"):
        zip_members(path)
