"""Run a sweep's specs as SLURM job arrays through submitit: each run (or ``--fuse`` / ``--parallel`` group) one task.

Before anything is written (:func:`preflight`): ``sbatch`` and submitit must be there, and ``sbatch
--test-only`` must accept the jobs as they will be asked — an unknown partition, GPUs asked of a
partition without them, a time limit over the partition's, an unknown constraint are SLURM's own words
on one line. Then (:func:`execute`) the runs are grouped, the groups split into arrays of at most the
cluster's ``MaxArraySize`` tasks (``scontrol show config``: it caps the task *index*), each array
submitted with one ``sbatch`` (submitit's ``map_array``) whose answer must be a job id, and recorded
(:mod:`.slurm_jobs`). Jobs write result records, never the catalog; this process takes them in as they
arrive, with the usual progress display, until every run is done, failed or lost. ``detach`` returns
right after submitting. Ctrl-C stops the waiting only: the jobs go on, and the message says how to
collect them (``seedscope status``) or cancel them (``scancel``).
"""

from __future__ import annotations

import os
import re
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from seedscope.errors import Interrupted, SeedscopeError
from seedscope.executors import slurm_jobs, slurm_queue
from seedscope.executors.base import ExecutionSummary, Progress, Runner, data_dir_text, runs_to_do
from seedscope.executors.fused import fused_groups
from seedscope.plan import RunSpec
from seedscope.store import ExperimentStore

if TYPE_CHECKING:
    from seedscope.executors.options import ExecutionOptions

#: seconds between takings-in of the results while waiting, and between looks at the queue
POLL_S = 1.0
QUEUE_S = 10.0
_JOB_ID = re.compile(r"^\d+(_\d+)?$")


class SubmissionRefused(SeedscopeError):
    """``sbatch`` refused the first array: nothing was submitted (a new experiment directory is removed again)."""


def _submitit():
    try:
        import submitit
    except ImportError:
        raise SeedscopeError("--executor slurm submits its jobs through submitit, which is not installed: "
                             "pip install 'seedscope[slurm]'") from None
    return submitit


def require() -> None:
    """sbatch, srun and squeue on PATH and submitit importable, or one sentence naming what to install."""
    for command in ("sbatch", "srun", "squeue", "scontrol"):
        slurm_queue.require(command, "--executor slurm submits the runs as SLURM jobs")
    _submitit()


def job_parameters(execution: "ExecutionOptions", name: str) -> dict[str, Any]:
    """What every job asks for, as submitit's parameters: partition, time, CPUs and GPUs of its runs, the rest."""
    settings = execution.slurm
    per_job = execution.runs_per_job
    extra = dict(settings.sbatch_options())
    if settings.mem:
        extra["mem"] = settings.mem  # SLURM reads its own units
    parameters = {
        "name": name, "timeout_min": settings.minutes() or slurm_queue.time_limit_minutes(settings.partition),
        "cpus_per_task": round(execution.cpus_per_run * per_job),
        "slurm_partition": settings.partition, "slurm_account": settings.account, "slurm_qos": settings.qos,
        "slurm_constraint": settings.constraint, "slurm_additional_parameters": extra or None,
    }
    gpus = round(execution.gpus_per_run * per_job)
    if gpus:
        parameters["slurm_gpus_per_node"] = gpus
    return {key: value for key, value in parameters.items() if value is not None}


def asked_text(parameters: dict[str, Any], execution: "ExecutionOptions") -> str:
    """What a job asks, in words, to go with SLURM's refusal."""
    parts = [f"partition {parameters.get('slurm_partition', '(default)')}", f"{parameters['cpus_per_task']} CPU(s)"]
    if parameters.get("slurm_gpus_per_node"):
        parts.append(f"{parameters['slurm_gpus_per_node']} GPU(s)")
    if execution.slurm.time:
        parts.append(f"time {execution.slurm.time}")
    return ", ".join(parts) + " per job"


def _executor(folder: Path, parameters: dict[str, Any]):
    submitit = _submitit()
    executor = submitit.AutoExecutor(folder=folder, cluster="slurm")
    executor.update_parameters(**parameters)
    return executor


def preflight(execution: "ExecutionOptions") -> None:
    """Refuse, before anything is written, jobs SLURM would refuse: ``sbatch --test-only`` of the very script."""
    require()
    parameters = job_parameters(execution, "seedscope-check")
    with tempfile.TemporaryDirectory(prefix="seedscope-sbatch-") as folder:
        executor = _executor(Path(folder), parameters)
        text = executor._executor._make_submission_file_text("true", "test")  # submitit's own sbatch script
        script = Path(folder) / "check.sh"
        script.write_text(text)
        done = slurm_queue.run(["sbatch", "--test-only", str(script)], "checking the jobs with sbatch", check=False)
    if done.returncode != 0:
        raise SeedscopeError(f"sbatch refuses these jobs: {slurm_queue.slurm_words(done.stderr or done.stdout)} "
                             f"(asked: {asked_text(parameters, execution)})")


def groups_of(todo: Sequence[RunSpec], execution: "ExecutionOptions") -> list[list[RunSpec]]:
    """One list of runs per array task: a fused group, ``parallel`` runs to pack, or one run."""
    if execution.fuse > 1:
        return fused_groups(todo, execution.fuse)
    size = execution.parallel
    return [list(todo[start:start + size]) for start in range(0, len(todo), size)]


def execute(
    specs: Sequence[RunSpec],
    store: ExperimentStore,
    *,
    execution: "ExecutionOptions",
    data_dir: str | os.PathLike | None = None,
    fail_fast: bool = False,
    progress: Progress | None = None,
    runner: Runner | None = None,
) -> ExecutionSummary:
    """Submit every spec not done (and not with a job still) as SLURM array tasks; then wait, unless detached."""
    from seedscope.executors.slurm_job import ArrayTask

    require()
    summary = ExecutionSummary()
    busy = slurm_jobs.in_flight(store)
    todo = [spec for spec in runs_to_do(specs, store, summary) if spec.run_id not in busy]
    if not todo:
        return summary
    root = store.path.resolve()
    parameters = job_parameters(execution, f"seedscope-{root.name}")
    folder = Path(execution.slurm.logs or root / slurm_jobs.SLURM_DIR / "jobs").resolve()
    task = ArrayTask(str(root), None if data_dir is None else str(Path(data_dir_text(data_dir)).resolve()), runner,
                     execution.fuse, execution.parallel)
    attempts = dict(store.catalog.query("SELECT run_id, attempts FROM runs"))
    groups = groups_of(todo, execution)
    size = slurm_queue.limits().max_array_size
    executor = _executor(folder, parameters)
    asked = {**execution.slurm.described(), "cpus_per_job": parameters["cpus_per_task"],
             "gpus_per_job": parameters.get("slurm_gpus_per_node", 0), "time_minutes": parameters["timeout_min"],
             "runs_per_job": execution.runs_per_job}
    try:
        for number, start in enumerate(range(0, len(groups), size)):
            part = groups[start:start + size]
            executor.update_parameters(slurm_array_parallelism=min(len(part), execution.array_parallelism or len(part)))
            jobs = _submit(executor, task, part, attempts, number, -(-len(groups) // size), summary,
                           asked_text(parameters, execution), root)
            tasks = {job.job_id: [spec.run_id for spec in group] for job, group in zip(jobs, part)}
            job_id = jobs[0].job_id.split("_")[0]
            slurm_jobs.record_submission(root, job_id, tasks, asked, folder)
            summary.submitted[job_id] = [run_id for run_ids in tasks.values() for run_id in run_ids]
        if execution.detach:
            return summary
        return _wait(store, todo, summary, progress, fail_fast)
    except KeyboardInterrupt:
        if not summary.submitted:
            raise
        jobs = " ".join(summary.submitted)
        raise Interrupted(f"stopped waiting; the jobs go on running on SLURM (job arrays {jobs}): `seedscope status "
                          f"{store.path}` takes in their results as they finish, rerunning the sweep with --resume "
                          f"submits the lost ones again, and `scancel {jobs}` cancels them") from None


def _submit(executor, task, part, attempts, number: int, arrays: int, summary, asked: str, root: Path) -> list:
    """One ``sbatch`` for ``part``: its jobs, each checked to have a job id; a refusal is one sentence."""
    submitit = _submitit()
    try:
        jobs = executor.map_array(task, [[spec.to_dict() for spec in group] for group in part],
                                  [{spec.run_id: _count(attempts.get(spec.run_id)) for spec in group} for group in part])
    except (submitit.core.utils.FailedJobError, submitit.core.utils.FailedSubmissionError, OSError) as error:
        words = slurm_queue.slurm_words(str(error))
        if number == 0:
            raise SubmissionRefused(f"sbatch refused the job array: {words} (asked: {asked})") from None
        raise SeedscopeError(
            f"sbatch refused job array {number + 1} of {arrays}: {words}; arrays {', '.join(summary.submitted)} were "
            f"submitted and run: `seedscope status {root}` follows them, and the same sweep with --resume submits the "
            "rest") from None
    wrong = [job.job_id for job in jobs if not _JOB_ID.match(str(job.job_id))]
    if wrong:
        raise SeedscopeError(f"sbatch did not answer with a job id (it said {wrong[0]!r}); nothing can follow these "
                             f"jobs — check `squeue --me` and cancel them with scancel")
    return jobs


def _count(value) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _wait(store: ExperimentStore, todo: Sequence[RunSpec], summary: ExecutionSummary, progress: Progress | None,
          fail_fast: bool) -> ExecutionSummary:
    """Take in results as they arrive until every run is done, failed or lost; Ctrl-C leaves the jobs running."""
    waiting = {spec.run_id: spec for spec in todo}
    started: set[str] = set()
    looked = time.monotonic()
    if progress:
        progress.start(len(todo))
    try:
        while waiting:
            store.take_in()
            statuses = {run_id: (status, error) for run_id, status, error in
                        store.catalog.query("SELECT run_id, status, error FROM runs")}
            for run_id in list(waiting):
                status, error = statuses[run_id]
                if status == "running" and run_id not in started and progress:
                    progress.run_started(waiting[run_id])
                    started.add(run_id)
                if status in ("done", "failed"):
                    _finished(waiting.pop(run_id), status == "done", summary, progress, error)
            if fail_fast and summary.failed:
                slurm_queue.cancel(summary.submitted)
                run_id = next(iter(summary.failed))
                raise SeedscopeError(f"run {run_id} failed ({summary.failed[run_id].strip().splitlines()[-1]}); its "
                                     "jobs were cancelled because of --fail-fast")
            if waiting and time.monotonic() - looked >= QUEUE_S:
                looked = time.monotonic()
                for run_id, state in slurm_jobs.run_states(store, list(waiting)).items():
                    if state.state == "lost":
                        summary.lost[run_id] = state.reason
                        _finished(waiting.pop(run_id), False, None, progress, None)
            if waiting:
                time.sleep(POLL_S)
    finally:
        if progress:
            progress.stop()
    return summary


def _finished(spec: RunSpec, ok: bool, summary: ExecutionSummary | None, progress: Progress | None, error) -> None:
    if summary is not None:
        if ok:
            summary.done.append(spec.run_id)
        else:
            summary.failed[spec.run_id] = str(error or "")
    if progress:
        progress.run_finished(spec, ok)
