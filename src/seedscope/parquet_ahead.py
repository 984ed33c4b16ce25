"""Parquet files decoded on a second core while the command that reads them is still importing.

``seedscope analyze`` spends most of a second importing pandas, scipy and its own modules
before it reads its first file, and pyarrow decodes Parquet without holding the interpreter's
lock. So the command line names its input files first (:func:`start`, before typer parses the
arguments and the command's module loads: :func:`seedscope.cli.commands.begin`); a thread decodes them in that
order, holding at most :data:`BUDGET` bytes of tables the reader has not taken yet, and the reader
takes each decoded table (:func:`take`) instead of decoding it again.
Only pyarrow is imported here. A file the thread cannot decode is left to the reader, which says
what is wrong with it; tables the reader passes over are dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

#: bytes of decoded tables held for the reader (beyond the file it waits for)
BUDGET = 512 * 2**20

_current: _Ahead | None = None


class _Ahead:
    """A thread decoding ``paths`` in order while less than :data:`BUDGET` bytes wait, or the reader waits."""

    def __init__(self, paths: list[Path]):
        self.paths = paths
        self.index = {path: i for i, path in enumerate(paths)}
        self.tables: dict[int, object] = {}
        self.asked = -1  # the furthest index the reader has asked for
        self.done = -1  # the last index decoded (or failed)
        self.stopped = False
        self.condition = threading.Condition()
        threading.Thread(target=self._decode, daemon=True).start()

    def _decode(self) -> None:
        import pyarrow.parquet as pq

        for i, path in enumerate(self.paths):
            with self.condition:
                self.condition.wait_for(lambda: self.stopped or i <= self.asked or self._held() < BUDGET)
                if self.stopped:
                    return
            try:
                table = pq.read_table(path)
            except Exception:  # noqa: BLE001  the reader reads it again and names what is wrong
                table = None
            with self.condition:
                if not self.stopped:
                    self.tables[i] = table
                self.done = i
                self.condition.notify_all()

    def _held(self) -> int:
        return sum(table.nbytes for table in self.tables.values() if table is not None)

    def take(self, path: Path):
        i = self.index.get(path)
        if i is None:
            return None
        with self.condition:
            self.asked = max(self.asked, i)
            self.condition.notify_all()
            self.condition.wait_for(lambda: self.stopped or self.done >= i)
            for passed in [j for j in self.tables if j < i]:  # files the reader went past
                del self.tables[passed]
            return self.tables.pop(i, None)

    def stop(self) -> None:
        with self.condition:
            self.stopped = True
            self.tables.clear()
            self.condition.notify_all()


def _key(path) -> Path:
    return Path(path).resolve()


def start(paths) -> None:
    """Decode ``paths`` ahead of the reader when every one is a Parquet file (else do nothing). Files already being
    decoded, the same in the same order (the command line started them before the command loaded), go on."""
    global _current
    files = [Path(p) for p in paths]
    if _current is not None and _current.paths == [_key(p) for p in files]:
        return
    stop()
    if len(files) > 1 and all(p.suffix == ".parquet" and p.is_file() for p in files):
        _current = _Ahead([_key(p) for p in files])


def take(path):
    """The decoded table of ``path`` (all its columns), or None when it was not decoded ahead."""
    return _current.take(_key(path)) if _current is not None else None


def stop() -> None:
    """Stop decoding ahead and drop what was decoded."""
    global _current
    if _current is not None:
        _current.stop()
        _current = None


@contextmanager
def decoding_ahead(paths) -> Iterator[None]:
    """:func:`start` for the block, :func:`stop` after it (however it ends)."""
    start(paths)
    try:
        yield
    finally:
        stop()
