"""How runs are executed, as one checked object: where (here, on Ray or on SLURM), how many at once, retries,
resources.

``sweep()`` and ``run_factor_study()`` take an :class:`ExecutionOptions`; the command line
builds one from ``--executor``, ``--parallel``, ``--fuse``, ``--ray-address``, ``--gpus-per-run``,
``--cpus-per-run``, ``--max-retries``, ``--fail-fast``, ``--detach`` and ``--array-parallelism`` (and
the config's ``slurm:`` block). It is checked when it is made, so a wrong combination is refused
before anything is written.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, fields
from typing import Any, Literal, Mapping

from seedscope.errors import SeedscopeError
from seedscope.slurm_config import SlurmSettings

#: the executors seedscope ships
EXECUTORS = ("local", "ray", "slurm")
#: the most runs ``--parallel`` packs (per GPU): each is a worker process that imports torch (about half a GiB before
#: any model), so 256 of them already need 128 GiB; a larger number is a typo, and the memory fit lowers it anyway
MAX_PARALLEL = 256
#: the most runs ``--fuse`` trains as one model: each adds a copy of the model, its gradients and AdamW's moments
MAX_FUSE = 64


@dataclass(frozen=True)
class ExecutionOptions:
    """Where and how the runs of a sweep or factor study are executed.

    ``executor`` ``local`` runs them in this process (``parallel`` > 1: that many at once in
    worker processes on this machine), ``ray`` as Ray tasks on a local cluster or the one at
    ``ray_address``, each asking for ``cpus_per_run`` CPUs and ``gpus_per_run`` GPUs (a
    fraction packs several runs on one GPU) and started again up to ``max_retries`` times when
    its worker dies; ``slurm`` as SLURM job arrays, one task per run (or per ``fuse`` / ``parallel``
    group, asking for the group's CPUs and GPUs), with ``slurm``'s partition, time limit and the rest.
    ``fail_fast`` stops at the first failed run instead of recording it.

    Parameters
    ----------
    executor : {"local", "ray", "slurm"}, default "local"
        Run here, as Ray tasks, or as SLURM jobs.
    parallel : int, default 1
        Runs at once on this machine (local only, per GPU when there are GPUs), each in a worker process; at most
        :data:`MAX_PARALLEL` (256).
    fuse : int, default 1
        Fine-tuning runs that differ only in their seeds trained as one stacked model in this process, this many at
        a time (1: each alone; at most :data:`MAX_FUSE`, 64). Local only, one process: not with ``parallel`` > 1.
    ray_address : str, optional
        A Ray cluster to join (``auto``, ``head:6379``, ``ray://head:10001``); default: ``$RAY_ADDRESS``, else start a
        local one. Every node that can take a run is checked for the data and the model before anything is written.
    gpus_per_run, cpus_per_run : float
        Resources each run asks for (Ray: a fraction of a GPU packs runs on it; SLURM: a group's total must be
        whole).
    max_retries : int, default 2
        Ray: restarts of a run whose worker or node dies (on any node).
    fail_fast : bool, default False
        Stop at the first failed run.
    detach : bool, default False
        SLURM: submit the jobs and return, leaving them running (``seedscope status`` follows them).
    array_parallelism : int, optional
        SLURM: how many tasks of a job array run at once at most (default: as many as SLURM gives).
    slurm : SlurmSettings
        SLURM: partition, time limit, memory, account, QoS, constraint, extra sbatch lines.

    Returns
    -------
    ExecutionOptions
        Checked when made: a wrong combination raises :class:`SeedscopeError` before anything runs.

    Examples
    --------
    >>> from seedscope import ExecutionOptions
    >>> ExecutionOptions(parallel=2).parallel
    2
    >>> ExecutionOptions(executor="ray", parallel=2)
    Traceback (most recent call last):
    ...
    seedscope.errors.SeedscopeError: --parallel packs runs on this machine; with --executor ray, Ray decides how many run at once (--cpus-per-run, --gpus-per-run)
    """

    executor: Literal["local", "ray"] = "local"
    parallel: int = 1
    fuse: int = 1
    ray_address: str | None = None
    gpus_per_run: float = 0.0
    cpus_per_run: float = 1.0
    max_retries: int = 2
    fail_fast: bool = False
    detach: bool = False
    array_parallelism: int | None = None
    slurm: SlurmSettings = field(default_factory=SlurmSettings)

    def __post_init__(self) -> None:
        executor = getattr(self.executor, "value", self.executor)  # the CLI's enum, or a string
        object.__setattr__(self, "executor", executor)
        if executor not in EXECUTORS:
            raise SeedscopeError(f"unknown executor {executor!r}; use local, ray or slurm")
        if isinstance(self.parallel, bool) or not isinstance(self.parallel, int) or not 1 <= self.parallel <= MAX_PARALLEL:
            raise SeedscopeError(f"--parallel must be a whole number of runs from 1 to {MAX_PARALLEL} (each is a worker "
                                 f"process of its own), not {self.parallel!r}")
        if isinstance(self.fuse, bool) or not isinstance(self.fuse, int) or not 1 <= self.fuse <= MAX_FUSE:
            raise SeedscopeError(f"--fuse must be a whole number of runs from 1 (each alone) to {MAX_FUSE}, not "
                                 f"{self.fuse!r}")
        if self.fuse > 1 and (executor == "ray" or self.parallel > 1):
            raise SeedscopeError("--fuse trains its runs as one model in this process; it does not combine with "
                                 f"{'--executor ray' if executor == 'ray' else '--parallel'}: choose one")
        if executor != "ray" and self.ray_address:
            raise SeedscopeError("--ray-address joins a Ray cluster; it needs --executor ray")
        if executor == "local" and self.gpus_per_run:
            raise SeedscopeError("--gpus-per-run is what each run asks of a cluster; it needs --executor ray or slurm")
        if executor == "ray" and self.parallel > 1:
            raise SeedscopeError("--parallel packs runs on this machine; with --executor ray, Ray decides how many run "
                                 "at once (--cpus-per-run, --gpus-per-run)")
        if not _number(self.gpus_per_run) or self.gpus_per_run < 0:
            raise SeedscopeError(f"--gpus-per-run must be 0 or more, got {self.gpus_per_run}")
        if not _number(self.cpus_per_run) or self.cpus_per_run <= 0:
            raise SeedscopeError(f"--cpus-per-run must be more than 0, got {self.cpus_per_run}")
        if isinstance(self.max_retries, bool) or not isinstance(self.max_retries, int) or self.max_retries < 0:
            raise SeedscopeError(f"--max-retries must be 0 or more, got {self.max_retries}")
        self._check_slurm(executor)

    def _check_slurm(self, executor: str) -> None:
        if self.detach and executor != "slurm":
            raise SeedscopeError("--detach submits the runs as SLURM jobs and returns; it needs --executor slurm (the "
                                 f"{executor} executor runs them in this process, which must stay)")
        if self.array_parallelism is not None:
            if executor != "slurm":
                raise SeedscopeError("--array-parallelism caps how many tasks of a SLURM job array run at once; it "
                                     "needs --executor slurm")
            if isinstance(self.array_parallelism, bool) or not isinstance(self.array_parallelism, int) \
                    or self.array_parallelism < 1:
                raise SeedscopeError(f"--array-parallelism must be 1 or more, not {self.array_parallelism!r}")
        if executor != "slurm":
            return
        group = max(self.fuse, self.parallel)
        for name, value, unit in (("--cpus-per-run", self.cpus_per_run, "CPU"), ("--gpus-per-run", self.gpus_per_run, "GPU")):
            total = value * group
            if abs(total - round(total)) > 1e-9 or (unit == "CPU" and round(total) < 1):
                per = f" × {group} runs per job" if group > 1 else ""
                raise SeedscopeError(f"SLURM gives whole {unit}s: {name} {value:g}{per} asks {total:g} per job; give a "
                                     f"value whose total is a whole number (to share one GPU, pack runs in a job with "
                                     "--parallel K and --gpus-per-run 1/K)")

    @property
    def runs_per_job(self) -> int:
        """SLURM: the runs one job holds (a fused or packed group, else one)."""
        return max(self.fuse, self.parallel)

    @classmethod
    def from_keywords(cls, execution: ExecutionOptions | None, keywords: Mapping[str, Any], caller: str) -> ExecutionOptions:
        """``execution``, or one built from the loose keywords older releases took (with a DeprecationWarning)."""
        if not keywords:
            return execution or cls()
        unknown = set(keywords) - {field.name for field in fields(cls)}
        if unknown:
            raise TypeError(f"{caller}() got an unexpected keyword argument {sorted(unknown)[0]!r}")
        if execution is not None:
            raise TypeError(f"{caller}(): give execution= or the loose keywords {', '.join(sorted(keywords))}, not both")
        warnings.warn(f"{caller}({', '.join(f'{k}=' for k in keywords)}…) is deprecated and goes in the next release; "
                      f"pass execution=ExecutionOptions(...)", DeprecationWarning, stacklevel=3)
        return cls(**keywords)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
