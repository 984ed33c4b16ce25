"""Atomic file writes: a reader (or a killed process) never sees half a file.

Write to a temporary file in the same directory, fsync it, then rename over the target.
Several outputs that belong together (a report's HTML, tables folder and figures folder) are
staged first and moved into place only once all of them are written.

Temporary files and folders are created as :func:`open` and :func:`os.mkdir` create new ones
(mode 0666 / 0777 less the user's umask), not with :mod:`tempfile`'s private 0600 / 0700: the
renamed result is a new file, and a store, report or table shared with a team or served by a
web server must be readable as the user's other files are.
"""

from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from seedscope.errors import SeedscopeError


@contextmanager
def atomic_path(target: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``target``; on success it replaces ``target``."""
    target = Path(target)
    fd, tmp_path = _new_temporary(target, _create_file)
    os.close(fd)
    try:
        yield tmp_path
        with open(tmp_path, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp_path, target)
        fsync_dir(target.parent)
    finally:
        tmp_path.unlink(missing_ok=True)


def _create_file(path: Path) -> int:
    """A new file (never an existing one, never through a link), mode 0666 less the umask, as ``open()`` makes."""
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                   | getattr(os, "O_CLOEXEC", 0), 0o666)


def _new_temporary(target: Path, create):
    """``create(path)`` for a fresh ``.<target name>.<random>.tmp`` beside ``target``: (its result, the path)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    while True:
        path = target.parent / f".{target.name}.{secrets.token_hex(4)}.tmp"
        try:
            return create(path), path
        except FileExistsError:  # another writer drew the same name: draw again
            continue


def atomic_write_text(target: str | os.PathLike, text: str) -> None:
    """Write ``text`` to ``target`` atomically (UTF-8)."""
    with atomic_path(target) as tmp:
        tmp.write_text(text, encoding="utf-8")


def fsync_dir(folder: Path) -> None:
    """Persist a rename: on POSIX the directory entry lives in the folder's own data."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def staged_dir(target: str | os.PathLike) -> Path:
    """A new empty staging folder beside ``target``; fill it, then :func:`move_into_place`."""
    return _new_temporary(Path(target), lambda path: os.mkdir(path, 0o777))[1]


def staged_file(target: str | os.PathLike, data: bytes) -> Path:
    """``data`` in a durable temporary file beside ``target`` (fsync'd); then :func:`move_into_place`."""
    fd, path = _new_temporary(Path(target), _create_file)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return path


def move_into_place(staged: Path, target: str | os.PathLike) -> None:
    """Rename a staged file over ``target``, or move a staged folder's files into ``target`` one by one."""
    target = Path(target)
    if staged.is_dir() and target.exists():
        for item in staged.iterdir():
            os.replace(item, target / item.name)
        staged.rmdir()
    else:
        os.replace(staged, target)
    fsync_dir(target.parent)


def discard(staged: Path) -> None:
    """Remove a staged file or folder that will not be moved into place."""
    shutil.rmtree(staged) if staged.is_dir() else staged.unlink(missing_ok=True)


def writable_folder(path: str | os.PathLike, what: str, fix: str) -> Path:
    """``path`` as a folder this process can write in (made when missing), or one sentence naming ``what``, why
    and the ``fix``: checked before long work whose result is written there only at its end."""
    path = Path(path)
    try:
        if path.exists() and not path.is_dir():
            raise SeedscopeError(f"{what} {path} is a file, not a folder; {fix}")
        path.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=path).close()  # what the folder's permissions and file system really allow
    except OSError as error:
        raise SeedscopeError(f"{what} {path} cannot be written ({error.strerror or error}); {fix}") from error
    return path
