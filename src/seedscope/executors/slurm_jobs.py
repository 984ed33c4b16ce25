"""A SLURM sweep's jobs: the record of each submission in ``DIR/slurm/``, and each run's state from its result and
the queue.

Every job array submitted for a store is recorded in ``DIR/slurm/submissions/<job id>.json`` (written
atomically right after ``sbatch`` answered): which runs each array task holds, what the jobs asked for
and where their logs are. A run's state is then, in this order:

- ``done`` / ``failed``: its result record (the store's files; taken into the catalog first);
- ``queued`` / ``running``: its latest task as ``squeue`` shows it (a task that COMPLETED a moment ago
  counts as running until its result is visible: a network file system may show it seconds later);
- ``lost``: submitted, yet no result and no job — cancelled, failed, killed with its node, or forgotten
  by the controller — with SLURM's state and reason, and the last line of the job's log;
- ``pending``: never submitted (or set to run again by ``--resume``).

``sacct`` is asked only for tasks the controller has forgotten, and only where accounting exists.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from seedscope.atomic import atomic_write_text
from seedscope.errors import SeedscopeError
from seedscope.executors import slurm_queue
from seedscope.executors.slurm_queue import QUEUED, RUNNING, TaskState
from seedscope.serialize import dumps
from seedscope.store.catalog import now
from seedscope.store.records import listing, read_record, record_path

if TYPE_CHECKING:
    from seedscope.store import ExperimentStore

SLURM_DIR = "slurm"
SUBMISSIONS = "submissions"
#: seconds a task that COMPLETED may take to show its result (a network file system's attribute cache) before it
#: counts as lost
VISIBLE_S = 120.0
STATES = ("pending", "queued", "running", "done", "failed", "lost")


def submissions_dir(root: Path) -> Path:
    return Path(root) / SLURM_DIR / SUBMISSIONS


def is_slurm_store(root: Path) -> bool:
    """Whether jobs were ever submitted to SLURM for this store."""
    return submissions_dir(root).is_dir() and any(submissions_dir(root).glob("*.json"))


def record_submission(root: Path, job_id: str, tasks: Mapping[str, list[str]], asked: Mapping[str, Any],
                      folder: Path) -> dict:
    """Keep what one ``sbatch`` submitted: task id → run ids, what the jobs asked for, their logs' folder."""
    record = {"job_id": job_id, "submitted_at": now(), "tasks": dict(tasks), "asked": dict(asked),
              "logs": str(folder)}
    atomic_write_text(submissions_dir(root) / f"{job_id}.json", dumps(record))
    return record


def submissions(root: Path) -> list[dict]:
    """Every submission record of the store, oldest first (an unreadable one is an error naming it)."""
    found = []
    for path in sorted(submissions_dir(root).glob("*.json")):
        try:
            found.append(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError) as error:
            raise SeedscopeError(f"{path} cannot be read ({error}); it records jobs submitted for {root}") from error
    return sorted(found, key=lambda record: record["submitted_at"])


@dataclass(frozen=True)
class Placement:
    """Where a run was last sent: its task (``123_4``), the submission's array job id and its logs' folder."""

    task: str
    job_id: str
    logs: Path


def placements(root: Path) -> dict[str, Placement]:
    """Each submitted run's latest task (a later submission of a run replaces an earlier one)."""
    found = {}
    for record in submissions(root):
        for task, run_ids in record["tasks"].items():
            for run_id in run_ids:
                found[run_id] = Placement(task, record["job_id"], Path(record["logs"]))
    return found


@dataclass(frozen=True)
class RunState:
    """A run's state (:data:`STATES`), its task and node where it has one, and why a lost run is lost."""

    state: str
    task: str = ""
    node: str = ""
    reason: str = ""


def run_states(store: "ExperimentStore", run_ids=None) -> dict[str, RunState]:
    """The state of each run (or of ``run_ids``): result records first (taken in, or still waiting in ``results/``),
    then the queue, then ``sacct`` (see above)."""
    statuses = {run_id: status for run_id, status, _ in store.catalog.statuses()}
    wanted = list(statuses) if run_ids is None else [r for r in run_ids if r in statuses]
    placed = placements(store.path)
    finished = [run_id for run_id in wanted if statuses[run_id] in ("done", "failed")]
    nodes = _nodes(store, set(finished)) if finished else {}
    states = {run_id: RunState(statuses[run_id], *nodes.get(run_id, (placed[run_id].task if run_id in placed else "", "")))
              for run_id in finished}
    open_runs = [run_id for run_id in wanted if run_id not in states]
    waiting = listing(store.path).results  # results not taken in (a store this user may not write)
    for run_id in [run_id for run_id in open_runs if run_id in waiting]:
        record = read_record(record_path(store.path, run_id), run_id)[0]
        if record is not None:
            job = (record.get("environment") or {}).get("slurm") or {}
            states[run_id] = RunState(record["status"], str(job.get("job_id") or ""), str(job.get("node") or ""))
            open_runs.remove(run_id)
    sent = [run_id for run_id in open_runs if run_id in placed]
    queue = slurm_queue.task_states(placed[r].job_id for r in sent) if sent else {}
    forgotten = [placed[r].task for r in sent if placed[r].task not in queue]
    if forgotten and slurm_queue.limits().accounting:
        queue.update(slurm_queue.accounted_states(forgotten))
    for run_id in open_runs:
        if run_id not in placed:
            states[run_id] = RunState("pending")
            continue
        place = placed[run_id]
        states[run_id] = _state(queue.get(place.task), place, statuses[run_id])
    return {run_id: states[run_id] for run_id in wanted}


def _nodes(store: "ExperimentStore", run_ids: set[str]) -> dict[str, tuple[str, str]]:
    """The job and node each finished run recorded in its environment (``slurm``)."""
    found = {}
    for run_id, text in store.catalog.query("SELECT run_id, environment_json FROM runs WHERE environment_json IS NOT NULL"):
        if run_id in run_ids and '"slurm"' in text:
            try:
                job = json.loads(text).get("slurm") or {}
            except ValueError:
                continue
            found[run_id] = (str(job.get("job_id") or ""), str(job.get("node") or ""))
    return found


def _state(task: TaskState | None, place: Placement, status: str) -> RunState:
    if task is None:
        return RunState("lost", place.task, "", f"its job {place.task} is gone without a result{_log_line(place)}")
    if task.state in QUEUED:
        return RunState("queued", place.task, task.node, task.reason)
    if task.state in RUNNING or (task.state == "COMPLETED" and _recent(task.ended)):
        return RunState("running", place.task, task.node)
    reason = task.state.lower() + (f" ({task.reason})" if task.reason else "")
    if task.state == "COMPLETED":
        reason = "completed without a result visible here"
    if task.reason == "JobLaunchFailure":
        reason += (f": SLURM could not start it on {task.node or 'its node'}, often because that node cannot see "
                   f"the logs' folder {place.logs} (the experiment directory must be on a file system every node "
                   "mounts)")
    return RunState("lost", place.task, task.node, f"its job {place.task} ended {reason}{_log_line(place)}")


def _recent(ended: datetime | None) -> bool:
    return ended is None or (datetime.now() - ended).total_seconds() < VISIBLE_S


def _log_line(place: Placement) -> str:
    """The last line of the task's error log, which names what stopped it (``''`` where there is none)."""
    try:
        text = (place.logs / f"{place.task}_0_log.err").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    lines = [line.strip() for line in text.splitlines()
             if line.strip() and not line.startswith(("submitit ", "srun: ", "slurmstepd"))]
    if not lines:
        return ""
    last = lines[-1].removeprefix("seedscope.errors.SeedscopeError: ")
    return f"; its log says: {last}"


def in_flight(store: "ExperimentStore") -> set[str]:
    """Runs a job still has (queued or running): ``--resume`` leaves them to it."""
    if not is_slurm_store(store.path):
        return set()
    return {run_id for run_id, state in run_states(store).items() if state.state in ("queued", "running")}


def live_jobs(store: "ExperimentStore") -> list[str]:
    """The array job ids that still have runs queued or running."""
    placed = placements(store.path)
    return sorted({placed[run_id].job_id for run_id in in_flight(store)}, key=_job_number)


def _job_number(job_id: str) -> tuple[int, str]:
    head = job_id.split("_")[0]
    return (int(head), job_id) if head.isdigit() else (0, job_id)
