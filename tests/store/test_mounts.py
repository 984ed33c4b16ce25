"""Which file system holds a path: this machine's real mounts (checked against util-linux's findmnt), a tmpfs and a
FUSE mount made for the test, and mountinfo lines of the cluster file systems in proc(5)'s format; a store on a
network or FUSE file system keeps SQLite's rollback journal, never WAL."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from contextlib import closing, contextmanager
from pathlib import Path

import pytest

from seedscope.store import CATALOG, ExperimentStore
from seedscope.store.mounts import Mount, is_network, mount_for, mount_of, network_filesystem, parse_mountinfo
from seedscope.store.responses import RESPONSES_FILE, ResponseCache

#: lines as /proc/self/mountinfo writes them: proc(5)'s own example, two captured on the machine these tests were
#: written on (its root disk, and a bindfs FUSE mount), and the cluster file systems' as their clients mount them
LINES = """\
36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard,resv_strict,resuid=65534,resgid=65534
42 27 0:39 / /tmp/bf-mnt rw,nosuid,nodev,relatime - fuse /tmp/bf-src rw,user_id=0,group_id=0,default_permissions,allow_other
120 27 0:52 / /home rw,relatime shared:70 - nfs4 fileserver:/export/home rw,vers=4.2,rsize=1048576,wsize=1048576,hard,proto=tcp
130 27 0:60 / /lustre/scratch rw,relatime shared:80 - lustre 10.0.0.1@o2ib:/scratch rw,flock,lazystatfs
140 27 0:70 / /gpfs/projects rw,relatime shared:90 - gpfs projects rw
150 27 0:80 / /mnt/share rw,relatime - cifs //server/share rw,vers=3.1.1,cache=strict
160 27 0:90 / /mnt/remote\\040data rw,nosuid,nodev,relatime - fuse.sshfs me@host:/data rw,user_id=1000,group_id=1000
170 120 254:0 /srv/local /home/me/local rw,relatime - ext4 /dev/vda rw
"""


def findmnt(path: Path) -> tuple[str, str]:
    """(mount point, type) of the mount holding ``path``, as util-linux's findmnt reads them (libmount; of a folder
    mounted over, it lists every mount, the one seen last)."""
    if shutil.which("findmnt") is None:
        pytest.skip("no findmnt to check against: apt-get install util-linux")
    listed = subprocess.run(["findmnt", "-n", "-o", "TARGET,FSTYPE", "--target", str(path)], check=True,
                            capture_output=True, text=True).stdout.splitlines()
    target, fstype = listed[-1].rsplit(None, 1)
    return target.strip(), fstype


@contextmanager
def mounted(command: list[str], point: Path):
    """A real mount made for the test (root only), unmounted afterwards."""
    point.mkdir(parents=True, exist_ok=True)
    made = subprocess.run(command, capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount here ({' '.join(command[:3])}…): {made.stderr.strip()[:200]}")
    try:
        yield point
    finally:  # lazily: a failed test's open files must not keep the mount after the test
        subprocess.run(["umount", "--lazy", str(point)], check=True)


@pytest.fixture
def fuse_folder(tmp_path):
    """A FUSE file system (bindfs: a folder mirrored through FUSE) at ``tmp_path / "fuse"``."""
    if shutil.which("bindfs") is None:
        pytest.skip("no FUSE file system to mount: apt-get install bindfs")
    (tmp_path / "behind").mkdir()
    with mounted(["bindfs", str(tmp_path / "behind"), str(tmp_path / "fuse")], tmp_path / "fuse") as point:
        yield point


def journal_mode(database: Path) -> str:
    with closing(sqlite3.connect(database)) as db:
        return db.execute("PRAGMA journal_mode").fetchone()[0]


def test_the_cluster_file_systems_are_told_from_lines_in_procs_format():
    mounts = parse_mountinfo(LINES + "a line that is not one\n")
    assert mounts[0] == Mount("98:0", "/mnt2", "ext3", "/dev/root") and len(mounts) == 9
    kinds = {path: mount_for(path, mounts).fstype for path in
             ["/home/me/runs/rte", "/lustre/scratch/me", "/gpfs/projects/nlp/store", "/mnt/share/x", "/mnt/remote data/x",
              "/tmp/bf-mnt/store", "/tmp/elsewhere", "/"]}
    assert kinds == {"/home/me/runs/rte": "nfs4", "/lustre/scratch/me": "lustre", "/gpfs/projects/nlp/store": "gpfs",
                     "/mnt/share/x": "cifs", "/mnt/remote data/x": "fuse.sshfs", "/tmp/bf-mnt/store": "fuse",
                     "/tmp/elsewhere": "ext4", "/": "ext4"}
    assert [fstype for fstype in kinds.values() if is_network(fstype)] == ["nfs4", "lustre", "gpfs", "cifs",
                                                                            "fuse.sshfs", "fuse"]
    assert mount_for("/home/me/local/runs", mounts).fstype == "ext4"  # a local disk bound inside the NFS home
    assert mount_for("/home/me/local/runs", mounts, device="0:52").fstype == "nfs4"  # the path's own device decides
    assert mount_for("/homes", mounts).point == "/"  # a prefix of the name is not a folder above it
    hidden = parse_mountinfo(LINES + "180 27 0:99 / /home rw - tmpfs tmpfs rw\n")
    assert mount_for("/home/me", hidden).fstype == "tmpfs"  # mounted over /home later: it is the one seen
    assert mount_for("/x", []) is None


@pytest.mark.parametrize("path", ["/", "/proc/self", "/dev/shm", "/sys/fs/cgroup", "/etc/hostname", "tmp_path"])
def test_this_machines_mounts_are_those_findmnt_reads(path, tmp_path):
    path = tmp_path if path == "tmp_path" else Path(path)
    if not path.exists():
        pytest.skip(f"{path} does not exist on this machine")
    mount = mount_of(path)
    assert (mount.point, mount.fstype) == findmnt(path)
    assert mount_of(path / "not" / "made" / "yet") == mount_of(path)  # a store not created yet: its folder above


def test_a_tmpfs_and_a_fuse_mount_made_here(tmp_path, fuse_folder):
    with mounted(["mount", "-t", "tmpfs", "-o", "size=1m", "seedscope-test", str(tmp_path / "ram")], tmp_path / "ram"):
        assert (mount_of(tmp_path / "ram").point, mount_of(tmp_path / "ram").fstype) == (str(tmp_path / "ram"), "tmpfs")
        assert network_filesystem(tmp_path / "ram") is None
    assert findmnt(fuse_folder) == (str(fuse_folder), "fuse") == (mount_of(fuse_folder).point, mount_of(fuse_folder).fstype)
    assert network_filesystem(fuse_folder / "store") == "fuse" and network_filesystem(tmp_path) is None


def test_a_store_on_a_fuse_mount_never_uses_wal(tmp_path, fuse_folder):
    local = ResponseCache(tmp_path / RESPONSES_FILE)
    assert journal_mode(tmp_path / RESPONSES_FILE) == "wal"  # on a local disk the runs write without waiting
    local.close()

    store = ExperimentStore.create(fuse_folder / "exp", {"runs": [{"run_id": "r1", "task": "rte", "model": "m",
                                                                   "method": "full", "seeds": {"model_init": 1}}]})
    store.mark_running("r1")
    cache = ResponseCache(store.path / RESPONSES_FILE)
    cache.put("k", '{"text": "yes"}')
    assert journal_mode(store.path / CATALOG) == journal_mode(store.path / RESPONSES_FILE) == "delete"
    cache.close()

    shutil.copy(tmp_path / RESPONSES_FILE, fuse_folder / "copied.sqlite")  # made in WAL mode, then moved to the mount
    assert journal_mode(fuse_folder / "copied.sqlite") == "wal"
    ResponseCache(fuse_folder / "copied.sqlite").close()
    assert journal_mode(fuse_folder / "copied.sqlite") == "delete"
    assert not list(fuse_folder.rglob("*-wal")) and not list(fuse_folder.rglob("*-shm"))
