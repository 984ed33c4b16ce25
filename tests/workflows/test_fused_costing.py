"""The fused speed-up measured on this machine: steady steps only, and a real group against a real run."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.workflows import fused_costing


def test_the_first_step_is_left_out(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr(fused_costing.time, "perf_counter", lambda: clock[0])

    def train(report):  # a first step of 0.3 s (first use), then steps of 0.05 s, on a clock of the test's own
        report(0)
        clock[0] += 0.3
        for done in range(1, 5):
            report(done)
            clock[0] += 0.05
        report(4)  # a step reported twice keeps its first time

    seconds = fused_costing.steady_step_seconds(train)
    assert 0.04 <= seconds <= 0.1  # (t4 − t1) / 3 steps, without the first step's 0.3 s


def test_a_run_of_one_step_cannot_be_timed():
    with pytest.raises(SeedscopeError, match="1 optimiser step"):
        fused_costing.steady_step_seconds(lambda report: [report(0), report(1)])


def test_a_real_group_is_timed_against_a_real_run(tiny_bert, data_dir, monkeypatch):
    hparams = {"max_train_examples": 32, "max_eval_examples": 8, "per_device_train_batch_size": 4, "max_steps": 100}
    group = [RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(seed), hparams=hparams) for seed in (1, 2)]
    assert fused_costing.timed_spec(group[0]).hparams["max_steps"] == fused_costing.TIMED_STEPS
    speedup = fused_costing.fused_speedup(group, data_dir)
    assert 0.05 < speedup < 20  # two members, measured (a CPU gains little or nothing)
