"""The Ray executor on a real local cluster (one CPU): same results as the local executor."""

from __future__ import annotations

import pandas as pd

from seedscope.executors import local
from seedscope.executors import ray as ray_executor
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import ExperimentStore

TINY = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "per_device_train_batch_size": 8,
        "max_seq_length": 48}


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
