"""The one reading discipline of every reader: what may be opened, how it is read, what a value must be.

- Only regular files and folders are opened: a named pipe, a device or a socket is refused at
  once (opening a pipe would wait for a writer forever), a symlink loop and a dangling link are
  named as such, and a file that cannot be read (permission, I/O) is named with the reason.
- Archive members are read with their checksum checked (zip CRC-32, also for the Zstandard
  members Python's ``zipfile`` cannot decompress), so a damaged member is an error, never data.
- JSON values are taken through :func:`member` / :func:`expect`, which check the type the reader
  expects and name the file, the record and the key of a value that is not of it.
- Scores are checked by :func:`seedscope.metrics.bounds.check_score`: finite, of a sane magnitude,
  and within [0, 1] (or [−1, 1]) for a metric that is bounded so.
"""

from __future__ import annotations

import errno
import functools
import json
import math
import os
import re
import stat
import zipfile
import zlib
from pathlib import Path

from seedscope.errors import SeedscopeError

#: what a JSON value must be, by the name a message uses
KINDS = {
    "an object": dict, "a list": list, "a string": str, "a number": (int, float), "an integer": int,
    "true or false": bool,
}


def _kind_name(value) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "true or false", type(None): "null",
            int: "a number", float: "a number"}.get(type(value), type(value).__name__)


def check_input(path: Path) -> None:
    """A path the user named: it must exist and be a regular file (not empty) or a folder that can be read."""
    try:
        info = os.stat(path)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise SeedscopeError(f"{path} is a symbolic link loop (it points back to itself)") from None
        if error.errno == errno.ENOENT:
            if os.path.islink(path):
                raise SeedscopeError(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist") from None
            raise SeedscopeError(f"{path} does not exist") from None
        raise SeedscopeError(f"cannot use {path}: {error.strerror or error}") from None
    mode = info.st_mode
    if stat.S_ISDIR(mode):
        if not os.access(path, os.R_OK | os.X_OK):
            raise SeedscopeError(f"cannot read {path}: permission denied (the folder cannot be listed)")
        check_folder(path)
        return
    if not stat.S_ISREG(mode):
        kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a socket" if stat.S_ISSOCK(mode)
                else "a device")
        raise SeedscopeError(f"{path} is {kind}, not a file: seedscope reads only regular files and folders")
    if info.st_size == 0:
        raise SeedscopeError(f"{path} is empty")
    if not os.access(path, os.R_OK):
        raise SeedscopeError(f"cannot read {path}: permission denied")


#: names of the files some reader would read from a folder
READ_SUFFIXES = (".csv", ".tsv", ".jsonl", ".json", ".parquet", ".pq", ".eval", ".txt")


def check_folder(folder: Path) -> None:
    """A folder's files that a reader would read: none may be a pipe, a device, a link loop or a dangling link
    (they would be skipped, or block the read, instead of being named). Each entry's kind comes with its folder's
    listing, so a store of 10,000 prediction files is looked over in a few hundredths of a second."""
    pending = [str(folder)]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):  # as rglob, into real folders only
                    pending.append(entry.path)
                elif (os.path.splitext(entry.name)[1].lower() in READ_SUFFIXES and not entry.is_file()
                      and not entry.is_dir()):
                    check_input(Path(entry.path))


def cannot_read(path: Path, error: OSError) -> SeedscopeError:
    """The error for a file the system would not let us read (permission, I/O, a folder in its place)."""
    reason = error.strerror or str(error)
    if isinstance(error, IsADirectoryError):
        reason = "it is a folder, where a file was expected"
    return SeedscopeError(f"cannot read {path}: {reason}")


def damaged_parquet(path: Path, error: Exception, what: str = "a readable Parquet file") -> SeedscopeError:
    """The error for a Parquet file pyarrow cannot read (cut short, damaged, another kind of file): the file named
    once, with pyarrow's reason."""
    first = str(error).strip().split("\n")[0]
    reason = re.sub(r"^Could not open Parquet input source '.*?': ", "", first).split(". ")[0]
    return SeedscopeError(f"{path} is not {what} (damaged, cut short or another kind of file: "
                          f"{reason or type(error).__name__})")


def names_unreadable_files(function):
    """Decorate a public reader: an ``OSError`` the system raises while it reads (permission, I/O) becomes one
    message naming the file, wherever in the reader it happened."""
    @functools.wraps(function)
    def reading(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except OSError as error:
            if error.filename:
                raise cannot_read(Path(error.filename), error) from None
            raise SeedscopeError(f"cannot read an input: {error}") from None

    return reading


def read_bytes(path: Path) -> bytes:
    """The whole file, after :func:`check_input`; a read that fails names the file and the reason."""
    check_input(path)
    try:
        return _read(path)
    except OSError as error:
        raise cannot_read(path, error) from None


def _read(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def read_text(path: Path) -> str:
    """The whole file as UTF-8 text (a byte-order mark dropped); any other encoding is one clear error."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SeedscopeError(f"{path} is not UTF-8 text (byte {error.start}: {error.reason}); save it as UTF-8") from None


def load_json(path: Path, text: str | None = None, *, where: str | None = None):
    """One JSON document (the file's text, or ``text`` read from it); bad JSON names the line."""
    try:
        return json.loads(read_text(path) if text is None else text)
    except json.JSONDecodeError as error:
        raise SeedscopeError(f"{where or path} line {error.lineno}: not valid JSON ({error.msg})") from None
    except RecursionError:
        raise SeedscopeError(f"{where or path}: the JSON is nested too deeply to read") from None


def expect(value, kind: str, where: str, *, null: bool = False):
    """``value`` when it is ``kind`` (a key of :data:`KINDS`), else an error naming where it sits."""
    if value is None and null:
        return None
    wanted = KINDS[kind]
    fits = isinstance(value, wanted) and not (isinstance(value, bool) and kind in ("a number", "an integer"))
    if kind == "a number" and fits and not math.isfinite(value):
        raise SeedscopeError(f"{where} is {value}, not a finite number")
    if not fits:
        shown = f" ({value!r})" if isinstance(value, (str, int, float)) and not isinstance(value, bool) \
            and len(repr(value)) < 40 else ""
        raise SeedscopeError(f"{where} is {_kind_name(value)}{shown}, expected {kind}")
    return value


_MISSING = object()


def member(record: dict, key: str, kind: str, where: str, *, default=_MISSING, null: bool = False):
    """``record[key]`` checked to be ``kind``; absent (or null, unless ``null``) gives ``default`` when one is given."""
    value = record.get(key, _MISSING)
    if value is _MISSING or (value is None and not null):
        if default is not _MISSING:
            return default
        raise SeedscopeError(f"{where}: no {key!r}" if value is _MISSING else f"{where}: {key!r} is null")
    return expect(value, kind, f"{where}: {key!r}", null=null)


#: zip compression method inspect_ai uses since 2026 (Zstandard); Python's zipfile reads it only from 3.14 on
ZSTD = 93


def zip_members(path: Path, what: str = "a zip archive") -> dict[str, bytes]:
    """Every member of a zip archive (``what``, for the message), decompressed, each checked against its CRC-32."""
    data = read_bytes(path)
    import io

    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError):
        raise SeedscopeError(f"{path} is not {what} (not a readable zip file: damaged, cut short or another kind of file)") from None
    members = {}
    with archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            try:
                content = archive.read(info) if info.compress_type != ZSTD else _zstd_member(data, info)
            except Exception as error:  # zipfile, zlib and pyarrow raise many types for a damaged member
                reason = str(error).split("\n")[0] or type(error).__name__
                raise SeedscopeError(f"{path}: archive member {info.filename} is damaged ({reason})") from None
            if zlib.crc32(content) != info.CRC:
                raise SeedscopeError(f"{path}: archive member {info.filename} is damaged (its CRC-32 does not match)")
            members[info.filename] = content
    return members


def _zstd_member(data: bytes, info: zipfile.ZipInfo) -> bytes:
    """A Zstandard member, decompressed by pyarrow from its place in the archive (after the local header)."""
    import pyarrow as pa

    start = info.header_offset
    local = data[start:start + 30]
    if len(local) < 30 or local[:4] != b"PK\x03\x04":
        raise ValueError("its local header is missing")
    begin = start + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    compressed = data[begin:begin + info.compress_size]
    if len(compressed) != info.compress_size:
        raise ValueError("it is cut short")
    return pa.decompress(compressed, decompressed_size=info.file_size, codec="zstd").to_pybytes()

