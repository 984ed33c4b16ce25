"""The fused executor: groups of seeds, each member stored as its own run, failures alone, resume after a kill."""

from __future__ import annotations

import pytest

import seedscope.runners
from seedscope.errors import SeedscopeError
from seedscope.executors import fused
from seedscope.executors.options import ExecutionOptions
from seedscope.plan import RunSpec, plan_to_dict, seed_sweep
from seedscope.plan.seeds import FactorSeeds
from seedscope.store import ExperimentStore

TINY = {"max_train_examples": 16, "max_eval_examples": 12, "max_steps": 2, "per_device_train_batch_size": 8,
        "max_seq_length": 48}


def _plan(model, seeds=(1, 2, 3), **hparams) -> list[RunSpec]:
    return seed_sweep(["rte"], [str(model)], list(seeds), hparams={**TINY, **hparams})


def test_groups_hold_runs_that_differ_only_in_their_seeds():
    a = seed_sweep(["rte"], ["m"], [1, 2, 3, 4, 5], hparams={"learning_rate": 1e-3})
    b = seed_sweep(["rte"], ["m"], [1, 2], hparams={"learning_rate": 1e-4})
    groups = fused.fused_groups([a[0], b[0], *a[1:], b[1]], 2)
    assert [[s.run_id for s in g] for g in groups] == [[a[0].run_id, a[1].run_id], [a[2].run_id, a[3].run_id],
                                                       [a[4].run_id], [b[0].run_id, b[1].run_id]]
    assert [g[0].hparams["learning_rate"] for g in groups] == [1e-3, 1e-3, 1e-3, 1e-4]


def test_options_refuse_what_does_not_combine():
    assert ExecutionOptions(fuse=4).fuse == 4
    for options, words in [({"fuse": 0}, "--fuse must be a whole number"), ({"fuse": 65}, "from 1"),
                           ({"fuse": 2, "parallel": 2}, "does not combine with --parallel"),
                           ({"fuse": 2, "executor": "ray"}, "does not combine with --executor ray")]:
        with pytest.raises(SeedscopeError, match=words):
            ExecutionOptions(**options)


def test_a_fused_sweep_stores_each_member_as_its_own_run(tmp_path, tiny_bert, data_dir, recording):
    specs = _plan(tiny_bert)
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs))
    progress = recording
    summary = fused.execute(specs, store, data_dir=data_dir, progress=progress, fuse=2)
    assert summary.done == [s.run_id for s in specs] and not summary.failed
    environment = store.environment().set_index("run_id")
    assert environment["execution"].tolist() == ["fused"] * 3
    assert environment["fused_members"].tolist() == [2, 2, 1] and environment["fused_member"].tolist() == [0, 1, 0]
    assert store.check() == [] and store.verify() == []
    assert progress.events[0] == ("start", 3) and progress.events[-1] == ("stop",)
    assert ("step", specs[1].run_id, 2, 2) in progress.events and ("finished", specs[2].run_id, True) in progress.events


def test_a_failed_group_is_recorded_for_each_member_and_the_sweep_goes_on(tmp_path, tiny_bert, data_dir, monkeypatch):
    specs = _plan(tiny_bert)
    real, calls = seedscope.runners.run_fused, []

    def first_group_breaks(group, data_dir, on_step=None):
        calls.append([s.run_id for s in group])
        if len(calls) == 1:
            raise RuntimeError("the fused pass broke")
        return real(group, data_dir, on_step=on_step)

    monkeypatch.setattr(seedscope.runners, "run_fused", first_group_breaks)
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs))
    summary = fused.execute(specs, store, data_dir=data_dir, fuse=2)
    assert list(summary.failed) == [specs[0].run_id, specs[1].run_id] and summary.done == [specs[2].run_id]
    assert "the fused pass broke" in summary.failed[specs[0].run_id]
    store_fail_fast = ExperimentStore.create(tmp_path / "ff", plan_to_dict(specs))
    calls.clear()
    with pytest.raises(SeedscopeError, match=r"failed \(RuntimeError: the fused pass broke\); stopped because of --fail-fast"):
        fused.execute(specs, store_fail_fast, data_dir=data_dir, fuse=2, fail_fast=True)
    assert store_fail_fast.runs()["status"].tolist() == ["failed", "failed", "pending"]


def test_resume_after_a_kill_fuses_only_the_unfinished_runs(tmp_path, tiny_bert, data_dir, monkeypatch):
    specs = _plan(tiny_bert, seeds=(1, 2, 3, 4))
    real, calls = seedscope.runners.run_fused, []

    def killed_in_second_group(group, data_dir, on_step=None):
        calls.append([s.run_id for s in group])
        if len(calls) == 2:
            raise KeyboardInterrupt  # Ctrl-C mid-group: no result, no failure record
        return real(group, data_dir, on_step=on_step)

    monkeypatch.setattr(seedscope.runners, "run_fused", killed_in_second_group)
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs))
    with pytest.raises(KeyboardInterrupt):
        fused.execute(specs, store, data_dir=data_dir, fuse=2)
    assert store.runs()["status"].tolist() == ["done", "done", "running", "running"]
    resumed = ExperimentStore.create(tmp_path / "exp", plan_to_dict(specs), resume=True)
    calls.clear()
    summary = fused.execute(specs, resumed, data_dir=data_dir, fuse=3)
    assert calls == [[specs[2].run_id, specs[3].run_id]]
    assert summary.skipped == [specs[0].run_id, specs[1].run_id]
    assert resumed.runs()["status"].tolist() == ["done"] * 4 and resumed.check() == []


def test_what_cannot_be_fused_is_refused_before_anything_runs(tiny_bert, tmp_path):
    with pytest.raises(SeedscopeError, match="group_by_length"):
        fused.check_fusable(seed_sweep(["rte"], [str(tiny_bert)], [1, 2], method="lora",
                                       hparams={"group_by_length": True}))
    with pytest.raises(SeedscopeError, match="not icl runs"):
        fused.check_fusable([RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(1), "icl")])
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(_plan(tiny_bert)))
    with pytest.raises(SeedscopeError, match="runner of your own"):
        fused.execute(_plan(tiny_bert), store, runner=lambda *a, **k: None, fuse=2)
