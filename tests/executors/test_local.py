"""The local executor: results stored as they come, failures recorded, fail-fast, resume after a kill."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.executors import local
from seedscope.executors.base import default_runner
from seedscope.plan.seeds import FactorSeeds
from seedscope.plan import RunSpec, plan_to_dict, seed_sweep
from seedscope.store import ExperimentStore

TINY = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "per_device_train_batch_size": 8,
        "max_seq_length": 48}


def _plan(model, seeds=(1, 2)) -> list[RunSpec]:
    return seed_sweep(["rte"], [str(model)], list(seeds), hparams=TINY)


def _broken(seed: int = 3) -> RunSpec:
    return RunSpec("rte", "/nonexistent/checkpoint", FactorSeeds.tied(seed), hparams=TINY)


def test_a_failed_run_is_recorded_and_the_sweep_goes_on(tmp_path, tiny_bert, data_dir, recording):
    specs = [_plan(tiny_bert)[0], _broken(), _plan(tiny_bert)[1]]
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs))
    progress = recording
    summary = local.execute(specs, store, data_dir=data_dir, progress=progress)
    assert summary.done == [specs[0].run_id, specs[2].run_id]
    assert list(summary.failed) == [specs[1].run_id] and "not found" in summary.failed[specs[1].run_id]
    runs = store.runs().set_index("run_id")
    assert runs["status"].tolist() == ["done", "failed", "done"]
    assert "/nonexistent/checkpoint" in runs.loc[specs[1].run_id, "error"]
    assert store.check() == []
    assert set(store.predictions()["run"]) == {"1", "2"}
    steps = [e for e in progress.events if e[0] == "step" and e[1] == specs[0].run_id]
    assert steps[0][2:] == (0, 2) and steps[-1][2:] == (2, 2)
    assert progress.events[0] == ("start", 3) and ("finished", specs[1].run_id, False) in progress.events


def test_fail_fast_stops_at_the_first_failure(tmp_path, tiny_bert, data_dir):
    specs = [_broken(), *_plan(tiny_bert, seeds=(1,))]
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs))
    with pytest.raises(SeedscopeError, match=r"run rte__checkpoint__full__s3 failed .*--fail-fast"):
        local.execute(specs, store, data_dir=data_dir, fail_fast=True)
    assert store.runs()["status"].tolist() == ["failed", "pending"]


def test_resume_after_a_kill_redoes_only_unfinished_runs(tmp_path, tiny_bert, data_dir):
    specs = _plan(tiny_bert, seeds=(1, 2, 3))
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs))
    calls = []
    run = default_runner()

    def killed_during_second_run(spec, data_dir, on_step=None):
        calls.append(spec.run_id)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process dies mid-run: no result, no failure record
        return run(spec, data_dir, on_step=on_step)

    with pytest.raises(KeyboardInterrupt):
        local.execute(specs, store, data_dir=data_dir, runner=killed_during_second_run)
    assert store.runs()["status"].tolist() == ["done", "running", "pending"]
    first_file = store.prediction_path(specs[0].run_id)
    written = first_file.stat().st_mtime_ns

    resumed = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs), resume=True)
    calls.clear()

    def counted(spec, data_dir, on_step=None):
        calls.append(spec.run_id)
        return run(spec, data_dir, on_step=on_step)

    summary = local.execute(specs, resumed, data_dir=data_dir, runner=counted)
    assert calls == [specs[1].run_id, specs[2].run_id]
    assert summary.skipped == [specs[0].run_id] and summary.done == [specs[1].run_id, specs[2].run_id]
    assert first_file.stat().st_mtime_ns == written
    assert resumed.runs()["status"].tolist() == ["done"] * 3 and resumed.runs()["attempts"].tolist() == [1, 2, 1]
    assert resumed.check() == []
