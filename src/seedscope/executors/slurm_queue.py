"""What SLURM says: its limits (``scontrol show config``), a partition's time limits, and where a sweep's jobs are.

A run's state is read in this order: its result record (the store's files: done or failed), then the
queue — ``squeue --states=all`` knows jobs pending, running and those that ended within the cluster's
``MinJobAge`` — and ``sacct`` only where accounting exists (without ``slurmdbd``, ``sacct`` fails, and a
job the controller has forgotten without leaving a result is simply lost). Every SLURM command that
fails is one sentence with SLURM's own words, never a traceback.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from datetime import datetime
from typing import Iterable

from seedscope.errors import SeedscopeError

#: what to install where a SLURM command is missing
INSTALL = ("run seedscope where SLURM's commands are (a login node of the cluster), or install SLURM's client "
           "(Debian / Ubuntu: apt-get install slurm-client)")
#: seconds a SLURM command may take before it counts as not answering
COMMAND_S = 120
#: queue states of a job that has not started, and of one that runs (``squeue``'s long names)
QUEUED = ("PENDING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESV_DEL_HOLD", "CONFIGURING", "SUSPENDED",
          "STOPPED", "SPECIAL_EXIT")
RUNNING = ("RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING")
#: a year in minutes: the time limit asked where the partition has none (submitit needs a number)
NO_LIMIT_MINUTES = 365 * 24 * 60


def require(command: str, why: str) -> str:
    """The path of a SLURM command, or one sentence saying it is missing and what to install."""
    path = shutil.which(command)
    if path is None:
        raise SeedscopeError(f"{why}, which needs SLURM's {command}, and it is not on PATH: {INSTALL}")
    return path


def slurm_words(text: str) -> str:
    """SLURM's message as one line: its last line, without the ``sbatch: error: …`` prefixes."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    line = lines[-1] if lines else "no message"
    for prefix in ("sbatch: error: Batch job submission failed: ", "allocation failure: ", "sbatch: error: ",
                   "squeue: error: ", "scontrol: error: ", "slurm_load_jobs error: ", "error: "):
        if line.startswith(prefix):
            line = line[len(prefix):]
    return line


def run(args: list[str], what: str, check: bool = True) -> subprocess.CompletedProcess:
    """Run a SLURM command; a failure (when ``check``) is one sentence naming ``what`` was asked and SLURM's words."""
    require(args[0], what)
    try:
        done = subprocess.run(args, capture_output=True, text=True, timeout=COMMAND_S)
    except subprocess.TimeoutExpired:
        raise SeedscopeError(f"{what}: {args[0]} did not answer within {COMMAND_S} s (is slurmctld up?)") from None
    if check and done.returncode != 0:
        raise SeedscopeError(f"{what}: {slurm_words(done.stderr or done.stdout)}")
    return done


def fields(text: str) -> dict[str, str]:
    """``Key=Value`` pairs of one ``scontrol … --oneliner`` line (or of ``scontrol show config``'s lines)."""
    found = {}
    for line in text.splitlines():
        if " = " in line and "=" not in line.split(" = ")[0]:  # show config: "Key   = value"
            key, _, value = line.partition(" = ")
            found[key.strip()] = value.strip()
            continue
        for item in line.split():
            key, sep, value = item.partition("=")
            if sep:
                found[key] = value
    return found


@dataclass(frozen=True)
class Limits:
    """The cluster's limits a submission must respect: the longest array, and whether ``sacct`` can answer."""

    max_array_size: int
    accounting: bool


def limits() -> Limits:
    """From ``scontrol show config``: ``MaxArraySize`` (an array's task indices run 0 … MaxArraySize − 1) and
    whether accounting is on (``AccountingStorageType`` other than none)."""
    config = fields(run(["scontrol", "show", "config"], "reading the SLURM configuration").stdout)
    try:
        size = int(config.get("MaxArraySize", "1001"))
    except ValueError:
        size = 1001
    storage = config.get("AccountingStorageType", "accounting_storage/none")
    return Limits(max(size, 1), storage not in ("accounting_storage/none", "(null)", ""))


def time_limit_minutes(partition: str | None) -> int:
    """The time limit a job gets where none is asked: the partition's default, else its maximum, else a year."""
    what = f"reading SLURM partition {partition}" if partition else "reading SLURM's partitions"
    done = run(["scontrol", "show", "partition", *([partition] if partition else []), "--oneliner"], what,
               check=False)
    lines = [line for line in done.stdout.splitlines() if line.startswith("PartitionName=")]
    if partition is None:
        lines = [line for line in lines if "Default=YES" in line] or lines[:1]
    if done.returncode != 0 or not lines:
        if partition is not None and "not found" in (done.stdout + done.stderr):
            raise SeedscopeError(f"SLURM has no partition {partition!r} (slurm.partition); `sinfo -s` lists them")
        raise SeedscopeError(f"{what}: {slurm_words(done.stderr or done.stdout)}")
    values = fields(lines[0])
    for key in ("DefaultTime", "MaxTime"):
        minutes = _minutes(values.get(key, ""))
        if minutes:
            return minutes
    return NO_LIMIT_MINUTES


def _minutes(text: str) -> int | None:
    """A time as ``scontrol`` prints it (``1-00:00:00``, ``02:00:00``, ``UNLIMITED``, ``NONE``) in minutes."""
    from seedscope.slurm_config import minutes

    try:
        return minutes(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class TaskState:
    """One array task (or job) as the queue tells it: its SLURM state, the reason, its node, when it ended."""

    job_id: str
    state: str
    reason: str = ""
    node: str = ""
    ended: datetime | None = None


def task_states(job_ids: Iterable[str]) -> dict[str, TaskState]:
    """Every task the controller still knows of these jobs (array or plain job ids), by task id (``123_4``).

    ``squeue --states=all`` lists pending, running and recently ended tasks one per line; an id the
    controller has forgotten is simply absent.
    """
    ids = sorted(set(job_ids))
    found: dict[str, TaskState] = {}
    for start in range(0, len(ids), 200):  # a command line of reasonable length
        done = run(["squeue", "-h", "-r", "--states=all", "-j", ",".join(ids[start:start + 200]),
                    "-o", "%i|%T|%r|%N|%e"], "asking SLURM's queue", check=False)
        if done.returncode != 0 and "Invalid job id" not in done.stderr:
            raise SeedscopeError(f"asking SLURM's queue: {slurm_words(done.stderr)}")
        for line in done.stdout.splitlines():
            parts = line.strip().split("|")
            if len(parts) == 5:
                job_id, state, reason, node, end = parts
                found[job_id] = TaskState(job_id, state.split()[0], "" if reason == "None" else reason, node,
                                          _time(end))
    return found


def accounted_states(job_ids: Iterable[str]) -> dict[str, TaskState]:
    """The final states ``sacct`` keeps of these jobs' tasks (only where accounting exists)."""
    ids = sorted(set(job_ids))
    if not ids:
        return {}
    done = run(["sacct", "-n", "-X", "-P", "-j", ",".join(ids), "-o", "JobID,State,Reason,NodeList,End"],
               "asking SLURM's accounting", check=False)
    found = {}
    for line in done.stdout.splitlines() if done.returncode == 0 else []:
        parts = line.strip().split("|")
        if len(parts) == 5:
            found[parts[0]] = TaskState(parts[0], parts[1].split()[0], parts[2], parts[3], _time(parts[4]))
    return found


def _time(text: str) -> datetime | None:
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


def cancel(job_ids: Iterable[str]) -> None:
    """Cancel these jobs (their queued and running tasks)."""
    ids = sorted(set(job_ids))
    if ids:
        run(["scancel", *ids], "cancelling the SLURM jobs", check=False)
