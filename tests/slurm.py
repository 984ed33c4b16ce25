"""A real SLURM cluster on this machine, for the tests and ``benchmarks/bench_cluster.py``.

:class:`LocalSlurm` writes a ``slurm.conf`` into a folder of its own — one node with this machine's
CPUs and memory (``slurmd -C``), two partitions, ``high`` preempting ``low`` with
``PreemptMode=REQUEUE``, no accounting (no ``slurmdbd``: ``sacct`` fails, as on many small clusters) —
starts ``munged``, ``slurmctld`` and ``slurmd`` on localhost with spool and state folders in that
folder, waits for the node to be idle, and stops the three by their PIDs. ``hidden`` is a folder the
node does not see: ``slurmd`` (and so every job) runs in a mount namespace of its own where an empty
file system covers it, as a compute node that does not mount a login node's disk.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

#: what installs the daemons (Debian's packages, SLURM 22.05); CI runs it
INSTALL = "apt-get install -y slurm-wlm munge"
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scontrol", "scancel")
#: seconds the daemons get to be ready
READY_S = 60.0


def missing() -> str | None:
    """Why a real cluster cannot start here (one line naming the install command), or None."""
    absent = [name for name in DAEMONS if shutil.which(name) is None and not Path("/usr/sbin", name).exists()]
    if absent:
        return f"SLURM is not installed here (no {', '.join(absent)}): {INSTALL}"
    if os.geteuid() != 0:
        return "the local SLURM cluster runs its daemons as root (SlurmUser=root); run the SLURM tests as root"
    return None


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _binary(name: str) -> str:
    return shutil.which(name) or str(Path("/usr/sbin", name))


def node_line() -> str:
    """This machine as ``slurmd -C`` sees it: ``CPUs=… Boards=… … RealMemory=…`` (the NodeName part left out)."""
    first = subprocess.run([_binary("slurmd"), "-C"], capture_output=True, text=True, check=True).stdout.splitlines()[0]
    return " ".join(part for part in first.split() if not part.startswith("NodeName="))


class LocalSlurm:
    """munged, slurmctld and slurmd on localhost, configured in ``folder``; ``SLURM_CONF`` names the config."""

    NODE = "seedscope-node"

    def __init__(self, folder: Path, *, max_array_size: int = 1001, max_job_count: int = 100_000,
                 hidden: Path | None = None):
        self.folder = Path(folder)
        self.max_array_size = max_array_size
        self.max_job_count = max_job_count
        self.hidden = hidden
        self.conf = self.folder / "slurm.conf"
        self.processes: dict[str, subprocess.Popen] = {}

    @property
    def environment(self) -> dict[str, str]:
        return {"SLURM_CONF": str(self.conf)}

    def write_config(self) -> None:
        for sub in ("state", "spool", "munge"):
            (self.folder / sub).mkdir(parents=True, exist_ok=True)
        key = self.folder / "munge" / "munge.key"
        key.write_bytes(secrets.token_bytes(1024))
        key.chmod(0o400)
        f = self.folder
        self.conf.write_text("\n".join([
            "ClusterName=seedscope-test",
            "SlurmctldHost=localhost(127.0.0.1)",
            "SlurmUser=root",
            f"SlurmctldPort={_free_port()}",
            f"SlurmdPort={_free_port()}",
            "AuthType=auth/munge",
            f"AuthInfo=socket={f / 'munge' / 'munge.socket'}",
            f"StateSaveLocation={f / 'state'}",
            f"SlurmdSpoolDir={f / 'spool'}",
            f"SlurmctldPidFile={f / 'slurmctld.pid'}",
            f"SlurmdPidFile={f / 'slurmd.pid'}",
            f"SlurmctldLogFile={f / 'slurmctld.log'}",
            f"SlurmdLogFile={f / 'slurmd.log'}",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/none",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "SchedulerType=sched/backfill",
            "SchedulerParameters=batch_sched_delay=0",  # start batch jobs at once (SLURM's high-throughput advice)
            "MpiDefault=none",
            "ReturnToService=2",
            "GresTypes=gpu",
            "AccountingStorageType=accounting_storage/none",
            "JobAcctGatherType=jobacct_gather/none",
            "PreemptType=preempt/partition_prio",
            "PreemptMode=REQUEUE",
            "JobRequeue=1",
            f"MaxArraySize={self.max_array_size}",
            f"MaxJobCount={self.max_job_count}",
            "MinJobAge=300",
            "KillWait=5",
            f"NodeName={self.NODE} NodeAddr=127.0.0.1 NodeHostname=localhost {node_line()} State=UNKNOWN",
            f"PartitionName=low Nodes={self.NODE} Default=YES MaxTime=INFINITE State=UP PriorityTier=1",
            f"PartitionName=high Nodes={self.NODE} MaxTime=INFINITE State=UP PriorityTier=10",
            "",
        ]))

    def start(self) -> "LocalSlurm":
        self.write_config()
        env = {**os.environ, **self.environment}
        m = self.folder / "munge"
        self._spawn("munged", [_binary("munged"), "-F", "--force", f"--key-file={m / 'munge.key'}",
                               f"--socket={m / 'munge.socket'}", f"--pid-file={m / 'munged.pid'}",
                               f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"], env)
        self._wait(lambda: (m / "munge.socket").exists(), "munged's socket")
        self._spawn("slurmctld", [_binary("slurmctld"), "-D", "-f", str(self.conf)], env)
        slurmd = [_binary("slurmd"), "-D", "-N", self.NODE, "-f", str(self.conf)]
        if self.hidden is not None:
            self.hidden.mkdir(parents=True, exist_ok=True)
            slurmd = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
                      f"mount -t tmpfs seedscope-unseen {self.hidden} && exec \"$@\"", "slurmd", *slurmd]
        self._spawn("slurmd", slurmd, env)
        self._wait(lambda: self.node_state() == "idle", "the node to be idle")
        return self

    def _spawn(self, name: str, command: list[str], env: dict) -> None:
        log = open(self.folder / f"{name}.out", "ab")
        self.processes[name] = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True)
        log.close()

    def _wait(self, ready, what: str) -> None:
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            dead = [name for name, process in self.processes.items() if process.poll() is not None]
            if dead:
                raise RuntimeError(f"{dead[0]} stopped while waiting for {what}: {self.log_tail(dead[0])}")
            if ready():
                return
            time.sleep(0.2)
        raise RuntimeError(f"waited {READY_S:.0f} s for {what}: {self.log_tail('slurmctld')}")

    def log_tail(self, name: str) -> str:
        paths = [self.folder / f"{name}.log", self.folder / f"{name}.out", self.folder / "munge" / f"{name}.log"]
        text = " | ".join(p.read_text(errors="replace").strip().splitlines()[-1] for p in paths
                          if p.is_file() and p.read_text(errors="replace").strip())
        return text or "(no log)"

    def command(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """A SLURM client command against this cluster (``scontrol``, ``squeue``, ``sbatch`` …)."""
        return subprocess.run(list(args), env={**os.environ, **self.environment}, capture_output=True, text=True,
                              check=check, timeout=60)

    def node_state(self) -> str:
        done = self.command("sinfo", "-h", "-N", "-n", self.NODE, "-o", "%T", check=False)
        return done.stdout.strip().splitlines()[0].rstrip("*") if done.returncode == 0 and done.stdout.strip() else ""

    def cancel_all(self) -> None:
        """Cancel every job and wait until the queue is empty (jobs of one test never run into the next)."""
        if self.processes.get("slurmctld") is None or self.processes["slurmctld"].poll() is not None:
            return
        self.command("scancel", "--user", "root", check=False)
        deadline = time.monotonic() + READY_S
        while time.monotonic() < deadline:
            if not self.command("squeue", "-h", "-o", "%i", check=False).stdout.strip():
                return
            time.sleep(0.3)

    def stop(self) -> None:
        """Stop the daemons by their PIDs: slurmd, slurmctld, then munged (each waited for, killed if it lingers)."""
        self.cancel_all()
        for name in ("slurmd", "slurmctld", "munged"):
            process = self.processes.pop(name, None)
            if process is None or process.poll() is not None:
                continue
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def __enter__(self) -> "LocalSlurm":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
