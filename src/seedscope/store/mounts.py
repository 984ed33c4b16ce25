"""Which file system holds a path, and whether it is shared over a network, where SQLite must not use WAL.

SQLite's write-ahead log keeps its index in shared memory (the ``-shm`` file every connection
maps), which only the processes of one machine share; SQLite's documentation says WAL "does
not work over a network filesystem", and a cluster's shared home or scratch folder (NFS,
Lustre, GPFS, CIFS/SMB, CephFS, a FUSE mount such as sshfs or s3fs) is exactly that. So the
store's SQLite files use the rollback journal there (see docs/reference/store.md).

On Linux the answer comes from ``/proc/self/mountinfo``: the mount of the path's device whose
mount point is the longest prefix of the path (``os.statvfs`` does not give the type). Where
that table is missing (another system) the type is unknown and the path counts as local.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

MOUNTINFO = Path("/proc/self/mountinfo")
#: file systems shared between machines over a network (or between a host and its virtual machines)
NETWORK_TYPES = frozenset({
    "nfs", "nfs4", "lustre", "gpfs", "cifs", "smb3", "smbfs", "ceph", "glusterfs", "beegfs", "afs", "9p", "virtiofs",
    "ocfs2", "gfs2", "pvfs2", "orangefs", "panfs", "wekafs",
})


@dataclass(frozen=True)
class Mount:
    """One line of ``/proc/self/mountinfo``: the device (``major:minor``), where it is mounted, its type and source."""

    device: str
    point: str
    fstype: str
    source: str


def parse_mountinfo(text: str) -> list[Mount]:
    """The mounts of a ``/proc/<pid>/mountinfo`` text, in its order (octal escapes such as ``\\040`` undone).

    A line reads ``ID PARENT MAJOR:MINOR ROOT POINT OPTIONS [OPTIONAL…] - TYPE SOURCE SUPER-OPTIONS``
    (proc(5)); a line that does not is skipped.
    """
    mounts = []
    for line in text.splitlines():
        head, separator, tail = line.partition(" - ")
        fields, rest = head.split(), tail.split()
        if not separator or len(fields) < 6 or len(rest) < 2:
            continue
        mounts.append(Mount(fields[2], _unescape(fields[4]), _unescape(rest[0]), _unescape(rest[1])))
    return mounts


def mount_for(path: str | os.PathLike, mounts: list[Mount], device: str | None = None) -> Mount | None:
    """The mount holding the absolute, resolved ``path``: among the mounts whose point is a prefix of it, those of
    ``device`` first (a bind mount, a device mounted twice), then the longest point; of equal ones the last mounted
    (it hides the others)."""
    target = Path(path)
    holding = [mount for mount in mounts if target == Path(mount.point) or Path(mount.point) in target.parents]
    if device is not None and any(mount.device == device for mount in holding):
        holding = [mount for mount in holding if mount.device == device]
    return max(reversed(holding), key=lambda mount: len(Path(mount.point).parts), default=None)


def mount_of(path: str | os.PathLike) -> Mount | None:
    """The mount holding ``path`` (or, for a path not made yet, its nearest existing folder); None where unknown."""
    existing = Path(path).absolute()
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    try:
        text = MOUNTINFO.read_text()
        stat = os.stat(existing)
    except OSError:
        return None
    return mount_for(existing.resolve(), parse_mountinfo(text), f"{os.major(stat.st_dev)}:{os.minor(stat.st_dev)}")


def is_network(fstype: str) -> bool:
    """Whether a file system type is shared over a network: :data:`NETWORK_TYPES`, and every FUSE mount
    (``fuse``, ``fuse.sshfs``, ``fuseblk``), whose other side seedscope cannot know."""
    return fstype in NETWORK_TYPES or fstype.split(".")[0] in {"fuse", "fuseblk"}


def network_filesystem(path: str | os.PathLike) -> str | None:
    """The type of the network (or FUSE) file system holding ``path`` (``nfs4``, ``lustre``, ``fuse.sshfs``), or
    None when it is a local disk or unknown."""
    mount = mount_of(path)
    return mount.fstype if mount is not None and is_network(mount.fstype) else None


def _unescape(field: str) -> str:
    """mountinfo writes a space, tab, newline and backslash in a path as ``\\040``, ``\\011``, ``\\012``, ``\\134``."""
    return re.sub(r"\\([0-7]{3})", lambda match: chr(int(match.group(1), 8)), field)
