"""A catalog another process holds locked: said at once, naming the process where the system tells it, never
called damage.

SQLite answers "database is locked" when another connection writes (its commit takes the whole
file for a few milliseconds) or holds a write transaction open. Readers wait :data:`READ_WAIT_S`
for a commit to end and then say the store is locked; on Linux ``/proc/locks`` names the
process holding the lock.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from seedscope.errors import SeedscopeError

#: how long a reader waits for another connection's commit (a sweep's takes some 20 ms) before saying it is locked
READ_WAIT_S = 2.0
#: how long a writer waits for another writer (threads and processes of one sweep write in turn)
WRITE_WAIT_S = 60.0
#: SQLite's result codes for a file or a table locked by another connection
_BUSY_CODES = (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED


class CatalogLocked(SeedscopeError):
    """The catalog is locked by another process writing to it: nothing is damaged; the command can be run again."""


def is_locked(error: sqlite3.Error) -> bool:
    """Whether SQLite refused because another connection holds the file (not because it is damaged)."""
    code = getattr(error, "sqlite_errorcode", None)  # Python 3.11+
    return code in _BUSY_CODES if code is not None else "is locked" in str(error)


def locked(path: Path) -> CatalogLocked:
    """The error saying that the catalog at ``path`` is locked, and by which process when the system tells."""
    holders = ", ".join(_describe(pid) for pid in lock_holders(path))
    by = f"another process ({holders})" if holders else "another process"
    return CatalogLocked(
        f"the experiment directory {path.parent} is locked: {by} is writing to its catalog {path.name}; nothing is "
        "damaged — run the command again once it has let go (a sweep holds the lock only while it records a run)"
    )


def lock_holders(path: Path) -> list[int]:
    """Process ids of the other processes holding a write lock on ``path`` (Linux' ``/proc/locks``; [] elsewhere)."""
    try:
        stat = os.stat(path)
        with open("/proc/locks") as table:
            lines = table.read().splitlines()
    except OSError:
        return []
    device = f"{os.major(stat.st_dev):02x}:{os.minor(stat.st_dev):02x}:{stat.st_ino}"
    pids = []
    for line in lines:
        fields = line.split()
        if "WRITE" in fields and device in fields and "->" not in fields:  # "->": a request waiting, not a holder
            pid = fields[fields.index("WRITE") + 1]
            if pid.isdigit() and int(pid) not in (0, os.getpid()) and int(pid) not in pids:
                pids.append(int(pid))
    return pids


def _describe(pid: int) -> str:
    """``pid 123: seedscope sweep …`` (its command line when readable, cut short)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            command = handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        command = ""
    command = command if len(command) <= 80 else command[:79] + "…"
    return f"pid {pid}: {command}" if command else f"pid {pid}"
