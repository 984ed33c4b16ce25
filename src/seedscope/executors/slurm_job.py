"""What runs inside a SLURM job: one array task's runs, each outcome written as result records, never the catalog.

submitit pickles an :class:`ArrayTask` per array task; on the compute node it runs the task's runs —
one, or a ``--fuse`` / ``--parallel`` group — with the executor that runs them on one machine
(:func:`seedscope.executors.local.here`), into :class:`JobRecords`: the store as a job sees it, which
commits every outcome as files (:mod:`seedscope.store.commit`) and leaves the catalog to the driver or
the next command that opens the store. ArrayTask is a ``submitit.helpers.Checkpointable`` whose
checkpoint is the task itself: on SLURM's signal before a time limit or a preemption (USR2), submitit
requeues it and it starts again from scratch, the same seeds giving the same predictions.

Each run's environment records where it ran (``slurm``: job id, array job and task, node, partition,
CPUs, ``SLURM_RESTART_COUNT`` — how often the job was requeued — and the attempt).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any, Mapping, Sequence

import submitit

from seedscope.errors import SeedscopeError
from seedscope.executors.base import Runner
from seedscope.plan import RunSpec
from seedscope.store.catalog import now
from seedscope.store.commit import commit_failure, commit_success
from seedscope.store.intake import PLAN_FILE
from seedscope.store.records import record_path, write_start


def where() -> dict[str, Any]:
    """This job as SLURM describes it, for each run's environment."""
    env = os.environ
    array_job, array_task = env.get("SLURM_ARRAY_JOB_ID"), env.get("SLURM_ARRAY_TASK_ID")
    return {
        "job_id": f"{array_job}_{array_task}" if array_job else env.get("SLURM_JOB_ID"),
        "array_job_id": array_job, "array_task_id": array_task,
        "node": env.get("SLURMD_NODENAME") or socket.gethostname(),
        "partition": env.get("SLURM_JOB_PARTITION"),
        "cpus_per_task": env.get("SLURM_CPUS_PER_TASK"),
        "gpus": env.get("SLURM_GPUS_ON_NODE") or env.get("CUDA_VISIBLE_DEVICES"),
        "restart_count": int(env.get("SLURM_RESTART_COUNT") or 0),
    }


def check_visible(root: Path, node: str) -> None:
    """The experiment directory must be visible here: else one sentence, which the job's log keeps."""
    if not (root / PLAN_FILE).is_file():
        raise SeedscopeError(f"the experiment directory {root} is not visible on node {node} (no {PLAN_FILE} there): "
                             "put --out on a file system that every compute node mounts (a shared home, project or "
                             "scratch folder), then rerun the sweep with --resume")


class JobRecords:
    """The store as a job sees it: its runs, whose outcomes it commits as result records, never into the catalog.

    It offers what an executor asks of a store (``pending_runs``, ``mark_running``, ``record_success``,
    ``record_failure``, ``runs``), so the executors of one machine run unchanged inside a job. A run whose
    result another execution already claimed is not run again.
    """

    def __init__(self, root: Path, specs: Sequence[RunSpec], attempts: Mapping[str, int], job: Mapping[str, Any]):
        self.path = Path(root)
        self.specs = {spec.run_id: spec for spec in specs}
        self.job = dict(job)
        self.attempt = {run_id: int(attempts.get(run_id, 0)) + self.job["restart_count"] + 1 for run_id in self.specs}
        self.started: dict[str, str] = {}

    def pending_runs(self) -> list[dict]:
        return [spec.to_dict() for run_id, spec in self.specs.items() if not record_path(self.path, run_id).exists()]

    def mark_running(self, run_id: str) -> None:
        self.started[run_id] = now()
        write_start(self.path, run_id, self.attempt[run_id], self.started[run_id], self._where(run_id))

    def _where(self, run_id: str) -> dict[str, Any]:
        return {**self.job, "attempt": self.attempt[run_id]}

    def record_success(self, run_id: str, predictions, metrics, environment=None, timings=None, prompt_prefix=None,
                       samples=None) -> None:
        commit_success(self.path, run_id, self.specs[run_id].task, predictions, metrics,
                       environment={**(environment or {}), "slurm": self._where(run_id)}, timings=timings,
                       attempt=self.attempt[run_id], started_at=self.started.get(run_id), prompt_prefix=prompt_prefix,
                       samples=samples)

    def record_failure(self, run_id: str, error: str, timings=None) -> None:
        commit_failure(self.path, run_id, error, timings=timings, attempt=self.attempt[run_id],
                       started_at=self.started.get(run_id), environment={"slurm": self._where(run_id)})

    def runs(self):
        """No run of this job has finished before it (what packing's memory fit asks)."""
        import pandas as pd

        return pd.DataFrame({"status": [], "timings": []})


class ArrayTask(submitit.helpers.Checkpointable):
    """One array task: run its runs into the store at ``store`` (requeued from scratch on SLURM's signal)."""

    def __init__(self, store: str, data_dir: str | None, runner: Runner | None, fuse: int = 1, parallel: int = 1):
        self.store, self.data_dir, self.runner = store, data_dir, runner
        self.fuse, self.parallel = fuse, parallel

    def __call__(self, specs: list[dict], attempts: dict[str, int]) -> dict[str, list[str]]:
        from seedscope.executors.local import here

        job = where()
        root = Path(self.store)
        check_visible(root, job["node"])
        threads = os.environ.get("SLURM_CPUS_PER_TASK")
        if threads and self.parallel == 1:  # the job's CPUs, not the node's, before torch is imported
            os.environ.setdefault("OMP_NUM_THREADS", threads)
            os.environ.setdefault("MKL_NUM_THREADS", threads)
        sink = JobRecords(root, [RunSpec.from_dict(spec) for spec in specs], attempts, job)
        summary = here(self.fuse, self.parallel)(list(sink.specs.values()), sink, data_dir=self.data_dir,
                                                 runner=self.runner)
        return {"done": summary.done, "failed": sorted(summary.failed)}
