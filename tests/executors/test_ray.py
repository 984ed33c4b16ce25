"""The Ray executor on a real local cluster (one CPU), and on a real cluster of three nodes that loses one: same
results as the local executor."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pandas as pd
import pytest

from seedscope.executors import local
from seedscope.executors import ray as ray_executor
from seedscope.plan import RunSpec, plan_to_dict, seed_sweep
from seedscope.store import CATALOG, PREDICTIONS, ExperimentStore

from .conftest import node_id

REPO = Path(__file__).resolve().parents[2]
TINY = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "per_device_train_batch_size": 8,
        "max_seq_length": 48}
#: runs of a few seconds each, so that the node lost after the first one is busy with the next
LONGER = ["--set", "max_train_examples=32", "--set", "max_eval_examples=12", "--set", "max_steps=30",
          "--set", "max_seq_length=48"]


class Steps:
    def __init__(self):
        self.seen = {}

    def start(self, total_runs): ...
    def run_started(self, spec): ...
    def run_finished(self, spec, ok): ...
    def stop(self): ...

    def step(self, spec, done, total):
        self.seen[spec.run_id] = (done, total)


def test_two_runs_on_a_local_ray_cluster(tmp_path, tiny_bert, data_dir):
    specs = seed_sweep(["rte"], [str(tiny_bert)], [1, 2], hparams=TINY)
    store = ExperimentStore.create(tmp_path / "ray", plan_to_dict(specs))
    progress = Steps()
    summary = ray_executor.execute(specs, store, data_dir=data_dir, cluster_cpus=1, progress=progress)
    assert sorted(summary.done) == sorted(s.run_id for s in specs) and summary.ok
    runs = store.runs()
    assert runs["status"].tolist() == ["done", "done"] and store.check() == []
    assert runs["attempts"].tolist() == [1, 1] and runs["started_at"].notna().all()  # marked running when started
    assert progress.seen == {s.run_id: (2, 2) for s in specs}  # steps travelled back through the Ray queue

    reference = ExperimentStore.create(tmp_path / "local", plan_to_dict(specs[:1]))
    local.execute(specs[:1], reference, data_dir=data_dir)
    ours = store.predictions().query("run == '1'").reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, reference.predictions(), check_exact=False, rtol=1e-5)
    assert (ours["prediction"] == reference.predictions()["prediction"]).all()


def crash_first_attempt(marker_dir: str, spec, data_dir, on_step=None):
    """A runner whose worker process dies (as if killed) the first time each run starts."""
    import os
    from pathlib import Path

    from seedscope.runners.finetune import runner as finetune

    marker = Path(marker_dir) / spec.run_id
    if not marker.exists():
        marker.touch()
        os._exit(1)
    return finetune.run(spec, data_dir, on_step=on_step)


def test_a_worker_that_dies_is_retried_and_its_attempts_counted(tmp_path, tiny_bert, data_dir):
    import functools
    import sys

    import ray.cloudpickle

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import this test module
    specs = seed_sweep(["rte"], [str(tiny_bert)], [1], hparams=TINY)
    store = ExperimentStore.create(tmp_path / "ray", plan_to_dict(specs))
    runner = functools.partial(crash_first_attempt, str(tmp_path))
    summary = ray_executor.execute(specs, store, data_dir=data_dir, cluster_cpus=1, runner=runner)
    assert summary.ok
    run = store.runs().iloc[0]
    assert run["status"] == "done" and run["attempts"] == 2 and store.check() == []

    crashed = ExperimentStore.create(tmp_path / "no-retry", plan_to_dict(specs))
    (tmp_path / specs[0].run_id).unlink()
    summary = ray_executor.execute(specs, crashed, data_dir=data_dir, cluster_cpus=1, runner=runner, max_retries=0)
    run = crashed.runs().iloc[0]
    assert not summary.ok and run["status"] == "failed" and run["attempts"] == 1 and pd.notna(run["started_at"])


def sleep_then_fail(spec, data_dir, on_step=None):
    import time

    time.sleep(60)
    raise RuntimeError("the test should have stopped first")


class KillsTheQueue(Steps):
    """When the run starts, the sweep's queue actor is killed, as the driver's node is when the head is lost."""

    def run_started(self, spec):
        import os
        import signal

        import ray._private.state

        pids = [actor["Pid"] for actor in ray._private.state.actors().values()
                if actor["ActorClassName"] == "_QueueActor" and actor["State"] == "ALIVE"]
        os.kill(pids[0], signal.SIGKILL)


def test_a_cluster_lost_under_the_driver_is_one_line_and_its_runs_stay_to_resume(tmp_path, tiny_bert, data_dir):
    import ray.cloudpickle

    from seedscope.errors import SeedscopeError

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    specs = seed_sweep(["rte"], [str(tiny_bert)], [1], hparams=TINY)
    store = ExperimentStore.create(tmp_path / "ray", plan_to_dict(specs))
    with pytest.raises(SeedscopeError, match=r"^lost the Ray cluster: its node on this machine stopped answering "
                                             r"\((RayActor|ActorDied|ActorUnavailable)Error\); the runs recorded so far are kept: .* --resume$"):
        ray_executor.execute(specs, store, data_dir=data_dir, cluster_cpus=1, runner=sleep_then_fail,
                             progress=KillsTheQueue())
    assert store.runs()["status"].tolist() == ["running"] and not ray.is_initialized()


def test_without_an_address_a_local_cluster_is_started_even_beside_a_running_one(ray_cluster):
    # ray_cluster wrote this machine's /tmp/ray/ray_current_cluster, which a bare ray.init() would join
    with ray_executor.connected(None, cluster_cpus=1) as ray:
        assert ray.get_runtime_context().gcs_address != ray_cluster.address
        assert ray.cluster_resources()["CPU"] == 1
    assert not ray.is_initialized()


def _first_finished_node(out) -> str | None:
    """The Ray node of the first run the sweep in ``out`` has finished, read as another process would (None before)."""
    import json
    import sqlite3

    try:
        with closing(sqlite3.connect(out / CATALOG, timeout=5)) as db:
            row = db.execute("SELECT environment_json FROM runs WHERE status = 'done' ORDER BY finished_at LIMIT 1")
            first = row.fetchone()
    except sqlite3.Error:  # not made yet
        return None
    return json.loads(first[0])["ray"]["node_id"] if first else None


def _actors_on(cluster, nodes) -> list[str]:
    """The classes of the actors alive on these nodes, read from the cluster's own state (GCS)."""
    ids = {node_id(cluster, node) for node in nodes}
    return [actor["ActorClassName"] for actor in cluster.global_state.actor_table(None).values()
            if actor["State"] == "ALIVE" and actor["Address"]["NodeID"] in ids]


def _attaches_a_driver_to_the_head() -> bool:
    """Ray from 2.10 attaches a driver to the head node when several nodes share this machine; 2.9 (the floor) to
    any of them, so on a one-machine cluster the driver's node (and the queue pinned to it) may be a worker."""
    from importlib.metadata import PackageNotFoundError, version

    from packaging.version import Version

    try:
        return Version(version("ray")) >= Version("2.10")
    except PackageNotFoundError:  # no Ray: the cluster fixture skips the test
        return True


@pytest.mark.skipif(not _attaches_a_driver_to_the_head(), reason="this Ray attaches the driver to any node of a "
                    "one-machine cluster, so the worker killed may be the driver's own (a real cluster has one per machine)")
def test_a_worker_node_lost_mid_sweep_has_its_run_started_again_on_another(tmp_path, tiny_bert, data_dir, ray_cluster):
    """As a user meets it: `seedscope sweep --ray-address` joins a cluster of a head and two worker nodes; once the
    first run is done, its node (busy with the next run by then) is lost. The sweep goes on: that run starts again on
    the other node, and every run ends done once, its second start counted."""
    out = tmp_path / "exp"
    args = ["sweep", "--task", "rte", "--model", str(tiny_bert), "--seeds", "1,2,3,4,5,6", "--out", str(out),
            "--data-dir", str(data_dir), *LONGER, "--executor", "ray", "--ray-address", ray_cluster.address]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    sweep = subprocess.Popen([sys.executable, "-m", "seedscope", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, env=env)
    workers = {node_id(ray_cluster, node): node for node in ray_cluster.worker_nodes}
    lost, on_workers, deadline = None, None, time.monotonic() + 300
    while sweep.poll() is None and time.monotonic() < deadline:
        if lost is None and (finished := _first_finished_node(out)):
            on_workers = _actors_on(ray_cluster, ray_cluster.worker_nodes)  # the sweep's queue must not be there
            lost_id, lost = finished, workers[finished]
            ray_cluster.remove_node(lost, allow_graceful=False)  # killed, as a machine that goes down
        time.sleep(0.1)
    _, err = sweep.communicate(timeout=60)
    assert on_workers == [], "an actor the sweep needs lives on a worker node that can be lost"
    assert sweep.returncode == 0 and lost is not None, err[-3000:]

    store = ExperimentStore.open(out)
    runs = store.runs()
    assert (runs["status"] == "done").all() and store.check() == []
    assert sorted(path.stem for path in (out / PREDICTIONS).iterdir()) == sorted(runs["run_id"])  # none twice
    assert runs["attempts"].sum() == 7  # the run going on the lost node was started again, and counted
    retried = runs.loc[runs["attempts"] == 2, "run_id"].item()
    nodes = store.environment().set_index("run_id")["ray.node_id"]
    assert nodes[retried] != lost_id and set(nodes) <= set(workers)

    specs = [RunSpec.from_dict(run) for run in store.plan()["runs"] if run["run_id"] == retried]
    reference = ExperimentStore.create(tmp_path / "local", plan_to_dict(specs))
    local.execute(specs, reference, data_dir=data_dir)  # the retried run's predictions are an uninterrupted run's
    expected = reference.predictions()
    ours = store.predictions().query(f"run == '{expected['run'].iloc[0]}'").reset_index(drop=True)
    pd.testing.assert_frame_equal(ours, expected, check_exact=False, rtol=1e-5)
    assert (ours["prediction"] == expected["prediction"]).all()
