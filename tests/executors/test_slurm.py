"""The SLURM executor against real daemons (``tests/slurm.py``: munged, slurmctld and slurmd on localhost).

Each test submits real job arrays through submitit and checks the store the jobs leave: predictions
equal to the local executor's, lost and requeued jobs, detached sweeps, failures, a rebuilt catalog.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from pathlib import Path

import cloudpickle
import pandas as pd
import pytest

from seedscope.executors import local
from seedscope.executors.options import ExecutionOptions
from seedscope.executors.slurm_jobs import run_states, submissions
from seedscope.plan import plan_to_dict
from seedscope.store import ExperimentStore
from seedscope.workflows.sweeping import as_config, sweep

TINY = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "per_device_train_batch_size": 8,
        "max_seq_length": 48}
#: seconds a test waits for its jobs at most
JOBS_S = 300
#: seconds a requeued job waits before the tests start it (SLURM's own wait is some two minutes)
SETTLE_S = 10
#: real daemons and real jobs (each a fresh Python that loads torch): run once in CI, not again at the floors
pytestmark = pytest.mark.slow

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the jobs cannot import this test module


@pytest.fixture(autouse=True)
def empty_queue(slurm_cluster):
    """Every test starts and ends with no job of another in the queue."""
    slurm_cluster.cancel_all()
    yield
    slurm_cluster.cancel_all()


def _config(model, seeds, **hparams) -> dict:
    return {"tasks": ["rte"], "models": [str(model)], "seeds": list(seeds), "hparams": {**TINY, **hparams}}


def _predictions(store: ExperimentStore) -> pd.DataFrame:
    return store.predictions().sort_values(["run", "example_id"]).reset_index(drop=True)


def test_a_4_run_sweep_as_job_arrays_equals_the_local_executor(tmp_path, slurm_cluster, tiny_bert, data_dir):
    store = sweep(_config(tiny_bert, [1, 2, 3, 4]), out=tmp_path / "slurm", data_dir=data_dir,
                  execution=ExecutionOptions(executor="slurm"))
    runs = store.runs()
    assert runs["status"].tolist() == ["done"] * 4 and store.check() == []
    assert runs["attempts"].tolist() == [1, 1, 1, 1]
    records = submissions(store.path)
    assert [len(record["tasks"]) for record in records] == [3, 1]  # MaxArraySize 3: two arrays
    environment = store.environment().set_index("run_id")
    first = records[0]["job_id"]
    assert environment["slurm.job_id"].tolist()[:3] == [f"{first}_{task}" for task in range(3)]
    assert set(environment["slurm.node"]) == {slurm_cluster.NODE} and set(environment["slurm.restart_count"]) == {0}
    assert set(environment["slurm.attempt"]) == {1} and set(environment["slurm.partition"]) == {"low"}

    specs = as_config(_config(tiny_bert, [1, 2, 3, 4])).run_specs()
    reference = ExperimentStore.create(tmp_path / "local", plan_to_dict(specs))
    local.execute(specs, reference, data_dir=data_dir)
    ours, theirs = _predictions(store), _predictions(reference)
    pd.testing.assert_frame_equal(ours, theirs, check_exact=False, rtol=1e-5)
    assert (ours["prediction"] == theirs["prediction"]).all()
    assert {state.state for state in run_states(store).values()} == {"done"}


def _wait_for(condition, what: str, limit: float = JOBS_S, store: ExperimentStore | None = None, cluster=None):
    """Wait for ``condition``; past ``limit``, fail saying what the runs and the queue were then."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.5)
    seen = []
    if store is not None:
        runs = ExperimentStore.open(store.path).runs()
        seen.append("runs: " + ", ".join(f"{run} {status}" for run, status in zip(runs["run_id"], runs["status"])))
    if cluster is not None:
        queue = cluster.command("squeue", "-h", "-o", "%i %T %r %S", check=False).stdout.strip()
        seen.append("queue: " + (queue.replace("\n", "; ") or "empty"))
    raise AssertionError(f"waited {limit:.0f} s for {what}" + "".join(f"; {line}" for line in seen))


def held_runner(hold: dict, spec, data_dir, on_step=None):
    """The fine-tuning runner, but a run named in ``hold`` first waits (as a long training would) while its job has
    been requeued fewer times than ``hold`` says: the tests interrupt it there."""
    import os

    from seedscope.runners.finetune import runner as finetune

    restarts = int(os.environ.get("SLURM_RESTART_COUNT") or 0)
    if restarts < hold.get(spec.run_id, 0):
        time.sleep(600)
    return finetune.run(spec, data_dir, on_step=on_step)


def failing_runner(spec, data_dir, on_step=None):
    """The fine-tuning runner, but seed 2 raises as a broken model would."""
    from seedscope.runners.finetune import runner as finetune

    if spec.seeds.model_init == 2:
        raise ValueError("the model has no classification head")
    return finetune.run(spec, data_dir, on_step=on_step)


def _detached(out: Path, config: dict, data_dir, runner=None, **options) -> ExperimentStore:
    return sweep(config, out=out, data_dir=data_dir, runner=runner,
                 execution=ExecutionOptions(executor="slurm", detach=True, **options))


def _started(store: ExperimentStore, run_id: str):
    return (store.path / "results" / f"{run_id}.started.json").is_file()


def test_a_cancelled_job_is_lost_and_resume_runs_only_it_again(tmp_path, slurm_cluster, tiny_bert, data_dir):
    import functools

    config = _config(tiny_bert, [1, 2])
    specs = as_config(config).run_specs()
    held, free = specs[0].run_id, specs[1].run_id
    store = _detached(tmp_path / "exp", config, data_dir, functools.partial(held_runner, {held: 99}))
    task = next(task for record in submissions(store.path) for task, runs in record["tasks"].items() if held in runs)
    _wait_for(lambda: _started(store, held), "the held run to start")
    slurm_cluster.command("scancel", task)
    _wait_for(lambda: run_states(ExperimentStore.open(store.path))[held].state == "lost", "the cancelled run to be lost")
    states = run_states(ExperimentStore.open(store.path))
    assert "cancelled" in states[held].reason and states[held].task == task
    _wait_for(lambda: run_states(ExperimentStore.open(store.path))[free].state == "done", "the other run")

    resumed = sweep(config, out=store.path, data_dir=data_dir, resume=True, execution=ExecutionOptions(executor="slurm"))
    runs = resumed.runs().set_index("run_id")
    assert runs["status"].tolist() == ["done", "done"] and resumed.check() == []
    assert runs.loc[held, "attempts"] == 2 and runs.loc[free, "attempts"] == 1  # the cancelled start counts
    assert [sorted(r for runs in record["tasks"].values() for r in runs) for record in submissions(store.path)] == [
        [held, free], [held]]  # only the lost run went again
    assert resumed.environment().set_index("run_id").loc[held, "slurm.attempt"] == 2


def test_a_preempted_and_a_signalled_job_are_requeued_and_give_the_same_predictions(
        tmp_path, slurm_cluster, tiny_bert, data_dir):
    import functools

    specs = as_config(_config(tiny_bert, [1, 2])).run_specs()
    first, second = (spec.run_id for spec in specs)
    store = _detached(tmp_path / "exp", _config(tiny_bert, [1, 2]), data_dir,
                      functools.partial(held_runner, {first: 1, second: 2}))
    tasks = {runs[0]: task for record in submissions(store.path) for task, runs in record["tasks"].items()}
    _wait_for(lambda: _started(store, first) and _started(store, second), "both runs to start")
    # a job of the high partition needs the whole node: SLURM requeues both (PreemptMode=REQUEUE)
    slurm_cluster.command("sbatch", "-p", "high", "-c", str(_node_cpus(slurm_cluster)), "-o", "/dev/null",
                          "--wrap", "sleep 2")
    requeued = lambda run_id: _started(store, run_id) and json.loads(  # noqa: E731
        (store.path / "results" / f"{run_id}.started.json").read_text())["environment"]["restart_count"]
    with _releasing_requeued(slurm_cluster, list(tasks.values())):
        _wait_for(lambda: requeued(second) == 1, "the second run to start again")
        slurm_cluster.command("scancel", "--signal=USR2", tasks[second])  # SLURM's warning before a time limit
        _wait_for(lambda: ExperimentStore.open(store.path).runs()["status"].eq("done").all(), "both runs to finish",
                  store=store, cluster=slurm_cluster)

    done = ExperimentStore.open(store.path)
    environment = done.environment().set_index("run_id")
    assert environment.loc[first, "slurm.restart_count"] == 1 and environment.loc[second, "slurm.restart_count"] == 2
    assert done.runs().set_index("run_id")["attempts"].to_dict() == {first: 2, second: 3}
    reference = sweep(_config(tiny_bert, [1, 2]), out=tmp_path / "uninterrupted", data_dir=data_dir,
                      execution=ExecutionOptions(executor="slurm"))
    pd.testing.assert_frame_equal(_predictions(done), _predictions(reference), check_exact=True)  # bit-identical


def _node_cpus(cluster) -> int:
    return int(cluster.command("sinfo", "-h", "-N", "-o", "%c").stdout.split()[0])


@contextlib.contextmanager
def _releasing_requeued(cluster, tasks):
    """A requeued job waits some two minutes (its BeginTime) before SLURM starts it again: while the block runs,
    once a job has waited ``SETTLE_S`` (its last start fully stopped: started again sooner, SLURM kills it,
    "credential revoked"), start it. The block may requeue a job more than once; each is released."""
    import threading

    stop = threading.Event()

    def release():
        pending_since: dict[str, float] = {}
        while not stop.is_set():
            for task in tasks:
                state = cluster.command("squeue", "-h", "-j", task, "-o", "%T|%r", check=False).stdout.strip()
                if state != "PENDING|BeginTime":
                    pending_since.pop(task, None)
                elif time.monotonic() - pending_since.setdefault(task, time.monotonic()) >= SETTLE_S:
                    cluster.command("scontrol", "update", f"JobId={task}", "StartTime=now", check=False)
                    # its next wait has a clock of its own: a start shorter than a poll is never seen running
                    del pending_since[task]
            stop.wait(1)

    releaser = threading.Thread(target=release, daemon=True)
    releaser.start()
    try:
        yield
    finally:
        stop.set()
        releaser.join()


def test_a_run_that_raises_is_recorded_failed_and_not_submitted_again(tmp_path, slurm_cluster, tiny_bert, data_dir):
    store = sweep(_config(tiny_bert, [1, 2]), out=tmp_path / "exp", data_dir=data_dir, runner=failing_runner,
                  execution=ExecutionOptions(executor="slurm"))
    runs = store.runs().set_index("run_id")
    failed = runs[runs["status"] == "failed"]
    assert len(failed) == 1 and failed["error"].iloc[0].strip().endswith("the model has no classification head")
    assert failed["attempts"].iloc[0] == 1 and len(submissions(store.path)) == 1
    assert run_states(store)[failed.index[0]].state == "failed"
    job = submissions(store.path)[0]["job_id"]  # its job may still be completing: it leaves, and no other comes
    _wait_for(lambda: not slurm_cluster.command("squeue", "-h", "-o", "%i").stdout.strip(), "the job to leave the queue")
    assert [record["job_id"] for record in submissions(store.path)] == [job]  # nothing resubmitted by itself


def test_fail_fast_cancels_the_jobs_left_and_array_parallelism_caps_the_array(tmp_path, slurm_cluster, tiny_bert,
                                                                              data_dir):
    from seedscope.errors import SeedscopeError

    with pytest.raises(SeedscopeError, match=r"failed \(ValueError: the model has no classification head\); its jobs "
                                             r"were cancelled because of --fail-fast"):
        sweep(_config(tiny_bert, [1, 2, 3]), out=tmp_path / "exp", data_dir=data_dir, runner=failing_runner,
              execution=ExecutionOptions(executor="slurm", fail_fast=True, array_parallelism=1))
    store = ExperimentStore.open(tmp_path / "exp")
    job = submissions(store.path)[0]["job_id"]
    script = (store.path / "slurm" / "jobs" / f"{job}_submission.sh").read_text()
    assert "#SBATCH --array=0-2%1" in script  # one task at a time
    first, second, third = store.runs()["status"]
    assert (first, second) == ("done", "failed") and third in ("pending", "running")  # the third did not finish
    _wait_for(lambda: run_states(ExperimentStore.open(store.path))[store.runs()["run_id"][2]].state == "lost",
              "the cancelled third run to be lost")  # until --resume submits it again
