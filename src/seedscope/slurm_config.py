"""The ``slurm:`` block of a sweep config: what every job of ``--executor slurm`` asks SLURM for.

Keys (each also ``--set slurm.<key>=…`` on the command line): ``partition``, ``time`` (a SLURM time
limit: minutes, ``MM:SS``, ``HH:MM:SS``, ``D-HH``, ``D-HH:MM`` or ``D-HH:MM:SS``), ``mem`` (per job, a
number with an optional unit K, M, G or T; M when none), ``account``, ``qos``, ``constraint``,
``sbatch`` (extra ``#SBATCH`` lines, such as ``--mail-type=END`` or ``--exclusive``) and ``logs`` (the
folder of the jobs' submitit files: their pickled runs and logs; default ``<out>/slurm/jobs``).
Checked when the config is read, so a malformed one stops before anything is written; what only
SLURM can judge (does the partition exist, does it have GPUs) is asked of SLURM before the first job.
"""

from __future__ import annotations

import math
import re
import shlex
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

#: SLURM's time-limit formats (``man sbatch``, --time)
TIME_FORMATS = "minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS"
_TIME = re.compile(r"^(?:(?P<days>\d+)-(?P<dh>\d+)(?::(?P<dm>\d+)(?::(?P<ds>\d+))?)?"
                   r"|(?P<a>\d+)(?::(?P<b>\d+)(?::(?P<c>\d+))?)?)$")
_MEM = re.compile(r"^\d+[KMGT]?$", re.IGNORECASE)
_OPTION = re.compile(r"^--(?P<name>[a-z][a-z0-9-]*)(?:=(?P<value>.+))?$")
#: sbatch options seedscope sets itself, each with what to do instead
OWN_OPTIONS = {
    "array": "it splits the runs into arrays by MaxArraySize; --array-parallelism caps how many tasks run at once",
    "output": "set slurm.logs for the folder of the logs", "error": "set slurm.logs for the folder of the logs",
    "job-name": "each job is named after the experiment directory", "open-mode": "submitit appends to the logs",
    "signal": "submitit asks for USR2 before the time limit, to requeue", "wrap": "submitit writes the job's command",
    "partition": "use slurm.partition", "time": "use slurm.time", "mem": "use slurm.mem",
    "account": "use slurm.account", "qos": "use slurm.qos", "constraint": "use slurm.constraint",
    "cpus-per-task": "use --cpus-per-run", "gpus-per-node": "use --gpus-per-run", "gres": "use --gpus-per-run",
    "gpus": "use --gpus-per-run", "gpus-per-task": "use --gpus-per-run", "ntasks": "each job is one task",
    "nodes": "each job runs on one node",
}


class SlurmSettings(BaseModel):
    """What each job of a SLURM sweep asks for, besides its CPUs and GPUs (``--cpus-per-run``, ``--gpus-per-run``).

    Parameters
    ----------
    partition, account, qos, constraint : str, optional
        As ``sbatch --partition`` etc.; the cluster's defaults when left out.
    time : str, optional
        The time limit of a job (one run, or one fused or packed group); default the partition's.
    mem : str, optional
        Memory per job (``16G``).
    sbatch : list of str
        Further sbatch options, one per item (``--mail-type=END``).
    logs : path, optional
        Where the jobs' submitit files and logs go (default ``<out>/slurm/jobs``); every node must see it.

    Returns
    -------
    SlurmSettings

    Examples
    --------
    >>> from seedscope.slurm_config import SlurmSettings
    >>> SlurmSettings(partition="gpu", time="1-12:00").minutes()
    2160
    >>> SlurmSettings(sbatch=["--mail-type=END", "--exclusive"]).sbatch_options()
    {'mail-type': 'END', 'exclusive': True}
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    partition: str | None = None
    time: str | None = None
    mem: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    sbatch: list[str] = Field(default_factory=list)
    logs: Path | None = None

    @field_validator("time", mode="before")
    @classmethod
    def _time(cls, value: Any) -> str | None:
        if value is None:
            return None
        text = str(value).strip()
        if isinstance(value, bool) or not _TIME.match(text) or minutes(text) <= 0:
            raise ValueError(f"{value!r} is not a SLURM time limit ({TIME_FORMATS}, e.g. 90 or 1-12:00:00)")
        return text

    @field_validator("mem", mode="before")
    @classmethod
    def _mem(cls, value: Any) -> str | None:
        if value is None:
            return None
        text = str(value).strip()
        if isinstance(value, bool) or not _MEM.match(text):
            raise ValueError(f"{value!r} is not a SLURM memory size (a number with an optional unit K, M, G or T: 16G)")
        return text.upper()

    @field_validator("partition", "account", "qos", "constraint", mode="before")
    @classmethod
    def _name(cls, value: Any) -> str | None:
        if value is not None and (not isinstance(value, (str, int)) or isinstance(value, bool) or not str(value).strip()
                                  or any(c.isspace() for c in str(value).strip())):
            raise ValueError(f"{value!r} is not a SLURM name (one word)")
        return None if value is None else str(value).strip()

    @field_validator("sbatch", mode="before")
    @classmethod
    def _sbatch(cls, lines: Any) -> list[str]:
        lines = [lines] if isinstance(lines, str) else lines
        if not isinstance(lines, list):
            raise ValueError("sbatch takes a list of sbatch options, e.g. ['--mail-type=END']")
        for line in lines:
            _option(line)
        return [str(line).strip() for line in lines]

    def minutes(self) -> int | None:
        """The time limit in whole minutes (rounded up), as submitit takes it; None when the partition's holds."""
        return None if self.time is None else minutes(self.time)

    def sbatch_options(self) -> dict[str, Any]:
        """The extra sbatch lines as options (name → value, True for a flag), as submitit writes them."""
        return dict(_option(line) for line in self.sbatch)

    def described(self) -> dict[str, Any]:
        """The settings that were given, for the record of a submission and of each run."""
        return {key: (str(value) if isinstance(value, Path) else value)
                for key, value in self.model_dump().items() if value not in (None, [])}


def minutes(text: str) -> int:
    """A SLURM time limit in whole minutes, rounded up (a bare number is minutes, ``MM:SS`` minutes and seconds)."""
    match = _TIME.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a SLURM time limit ({TIME_FORMATS})")
    if match["days"] is not None:
        days, hours, mins, secs = (int(match[k] or 0) for k in ("days", "dh", "dm", "ds"))
    else:
        parts = [int(match[k]) for k in ("a", "b", "c") if match[k] is not None]
        hours, mins, secs = (0, parts[0], 0) if len(parts) == 1 else (0, *parts) if len(parts) == 2 else tuple(parts)
        days = 0
    return math.ceil(((days * 24 + hours) * 60 + mins) + secs / 60)


def _option(line: Any) -> tuple[str, Any]:
    """One extra sbatch line as (option, value): ``--name=value``, ``--name value``, ``--flag``, ``#SBATCH …`` too."""
    text = str(line).strip() if isinstance(line, str) else ""
    text = text[len("#SBATCH"):].strip() if text.upper().startswith("#SBATCH") else text
    try:
        words = shlex.split(text)
    except ValueError:
        words = []
    if len(words) == 2 and "=" not in words[0] and not words[1].startswith("-"):
        words = [f"{words[0]}={words[1]}"]
    match = _OPTION.match(words[0]) if len(words) == 1 else None
    if match is None:
        raise ValueError(f"{line!r} is not one sbatch option (write --name=value or --flag, e.g. --mail-type=END)")
    name = match["name"]
    if name in OWN_OPTIONS:
        raise ValueError(f"{line!r}: seedscope sets --{name} itself; {OWN_OPTIONS[name]}")
    return name, (match["value"].strip() if match["value"] else True)
