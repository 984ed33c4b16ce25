"""The store's cache of server responses: every answer kept as it arrives, so none is asked for twice.

A study that asks a server is slow and may cost money; a killed one must lose nothing already
answered. Each response is written to ``DIR/responses.sqlite`` (one row per request, keyed by
the SHA-256 of the server's URL, the endpoint, the request and the run's ``rerun`` number) in
its own transaction the moment it arrives; a resumed or repeated study reads it back instead
of asking. An identical rerun (``rerun``, ``--repeat``) is a different key on purpose: it asks
again, which is what measures the server's noise floor. On a network file system the file keeps
SQLite's rollback journal instead of WAL (:func:`journal_mode`).

The cache keeps text and reads nothing into it: what goes in has been checked by the engine,
and what comes back is checked again before it is used (a row that fails is dropped and asked
again), so a row written by an older seedscope, or damaged, costs one request, never a result.

The sweep tells the runs where the file is through :data:`RESPONSES_ENV` (set by
:func:`responses_in`), so that every executor's workers — threads, processes, Ray on this
machine — find it; a run started without it keeps no cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from seedscope.store.mounts import network_filesystem

#: the environment variable naming the response cache of the sweep being run
RESPONSES_ENV = "SEEDSCOPE_RESPONSES"
#: the cache's file name in an experiment directory
RESPONSES_FILE = "responses.sqlite"


@contextmanager
def responses_in(directory: str | os.PathLike) -> Iterator[Path]:
    """Runs started inside cache their server responses in ``directory``'s :data:`RESPONSES_FILE`."""
    path = Path(directory) / RESPONSES_FILE
    before = os.environ.get(RESPONSES_ENV)
    os.environ[RESPONSES_ENV] = str(path)
    try:
        yield path
    finally:
        if before is None:
            os.environ.pop(RESPONSES_ENV, None)
        else:
            os.environ[RESPONSES_ENV] = before


def request_key(*parts: Any) -> str:
    """The SHA-256 of the parts as canonical JSON: the same request, the same key."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def journal_mode(path: str | os.PathLike) -> str:
    """WAL on a local disk (the runs of a sweep write at once without waiting for each other's readers); the rollback
    journal on a network or FUSE file system, where WAL's shared memory does not work (:mod:`seedscope.store.mounts`).
    Set at every opening: a cache made in WAL mode on a local disk and copied to a shared folder is turned back."""
    return "DELETE" if network_filesystem(path) else "WAL"


def _connect(path: Path) -> sqlite3.Connection:
    """The cache's one connection: every setting of how the file is opened and journalled is made here."""
    connection = sqlite3.connect(path, timeout=60, check_same_thread=False, isolation_level=None)
    connection.execute(f"PRAGMA journal_mode={journal_mode(path)}")
    connection.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, response TEXT NOT NULL)")
    return connection


class ResponseCache:
    """``get``/``put``/``drop`` of response texts by key, safe for the threads of one run and the processes of a sweep."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._connection: sqlite3.Connection | None = _connect(self.path)

    @classmethod
    def of_sweep(cls) -> "ResponseCache | None":
        """The cache the running sweep named (:data:`RESPONSES_ENV`), or None."""
        path = os.environ.get(RESPONSES_ENV)
        return cls(path) if path else None

    def get(self, key: str) -> str | None:
        """The response kept for ``key`` as it was put, or None (also once the cache is closed)."""
        with self._lock:
            if self._connection is None:
                return None
            row = self._connection.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def put(self, key: str, response: str) -> None:
        """Keep ``response`` for ``key`` (nothing, once the cache is closed: a request still in flight when its run
        ended)."""
        with self._lock:
            if self._connection is not None:
                self._connection.execute("INSERT OR REPLACE INTO responses VALUES (?, ?)", (key, response))

    def drop(self, key: str) -> None:
        """Forget the response of ``key`` (one that failed its checks): the next run asks again."""
        with self._lock:
            if self._connection is not None:
                self._connection.execute("DELETE FROM responses WHERE key = ?", (key,))

    def __len__(self) -> int:
        with self._lock:
            return self._connection.execute("SELECT COUNT(*) FROM responses").fetchone()[0] if self._connection else 0

    def close(self) -> None:
        """Let the file go; a thread still asking (its run ended) finds the cache closed, never a closed connection."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None
