"""The wall time of each way to run a plan, and the pick: hand-worked cases, bounds on random ones."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from seedscope.plan import seed_sweep
from seedscope.workflows import run_choice
from seedscope.workflows.costing import packed_wall


def test_packed_wall_counts_waves():
    assert packed_wall([10.0] * 8, 4) == 20.0  # two waves of four
    assert packed_wall([10.0] * 8, 3) == 30.0  # three waves: 3, 3, 2
    assert packed_wall([10.0] * 4, 8) == 10.0  # fewer runs than workers: one wave
    assert packed_wall([7.0, 5.0, 4.0, 3.0], 2) == 10.0  # 7+3 and 5+4: longest first to the first free worker
    assert packed_wall([10.0] * 4, 4, slowdown=1.5) == 15.0
    assert packed_wall([], 4) == 0.0


def test_packed_wall_keeps_within_the_list_scheduling_bounds_on_random_runs():
    rng = np.random.default_rng(0)
    for _ in range(200):
        seconds, workers = rng.uniform(1, 100, rng.integers(1, 30)).tolist(), int(rng.integers(1, 9))
        wall = packed_wall(seconds, workers)
        bound = max(sum(seconds) / workers, max(seconds))  # no schedule beats this
        assert bound - 1e-9 <= wall <= sum(seconds) / workers + max(seconds) + 1e-9  # Graham's bound
        assert packed_wall(seconds, 1) == pytest.approx(sum(seconds))


def test_gpu_slowdown_follows_the_measured_ends():
    assert run_choice.gpu_slowdown(1, 10**9) == 1.0
    assert run_choice.gpu_slowdown(4, 22_713_216) == 1.0  # MiniLM-sized: four kept their speed (H100)
    assert run_choice.gpu_slowdown(2, 355_000_000) == 2.0  # RoBERTa-large-sized: two gained nothing (H200)
    middle = math.sqrt(run_choice.SHARES_FREELY * run_choice.SHARES_NOTHING)  # half-way in the logarithm
    assert run_choice.gpu_slowdown(5, int(middle)) == pytest.approx(3.0, rel=1e-6)
    assert run_choice.gpu_slowdown(4, None) == 4.0


def _timed(seconds: float, train: float):
    """``run_seconds`` of a CPU: each run ``seconds`` alone at full threads, ``train`` of them training."""
    def timed(specs, data_dir, *, parallel, store, on_calibrate):  # slower with fewer threads
        slower = parallel ** 0.5
        return pd.DataFrame({"task": "rte", "to_do": [1] * 8, "example_epochs": 1.0, "seconds": seconds * slower,
                             "train_seconds": train * slower, "source": "short timed run"})
    return timed


def test_ways_and_the_pick(monkeypatch):
    monkeypatch.setattr(run_choice, "run_seconds", _timed(10.0, 10.0))
    monkeypatch.setattr(run_choice, "_cores", lambda: 4)
    measured = []
    monkeypatch.setattr(run_choice, "fused_speedup", lambda group, data_dir: measured.append(len(group)) or 0.8)
    specs = seed_sweep(["rte"], ["m"], range(1, 9))
    found = run_choice.ways(specs, None, [1, 4], gpus=0, parameters=None)
    assert [way.name for way in found] == ["one after another", "packed, --parallel 4", "fused, --fuse 4"]
    assert found[0].seconds == 80.0 and found[1].seconds == 40.0  # two waves of runs taking 20 s at one thread
    assert found[1].note == "2 wave(s) of up to 4, 1 threads each"
    assert found[2].seconds == pytest.approx(100.0)  # 80 s of training at 0.80×
    assert "training at 0.80× the throughput of one after another (measured here, 6 steps each)" in found[2].note
    assert measured == [4]  # one profile: timed once, for its first group
    assert run_choice.pick(found).parallel == 4
    monkeypatch.setattr(run_choice, "fused_speedup", lambda group, data_dir: 1.0)
    on_gpu = run_choice.ways(specs, None, [1, 2], gpus=1, parameters=355_000_000)  # no gain: the tie goes to fewer
    assert on_gpu[0].seconds == on_gpu[1].seconds == on_gpu[2].seconds and run_choice.pick(on_gpu).parallel == 1
    assert run_choice.pick(on_gpu).fuse == 1
    assert run_choice.candidates(cores=16, gpus=1) == [1, 2, 4, 8] and run_choice.candidates(2, 0) == [1, 2]


def test_a_fused_group_gains_on_its_training_alone_as_measured(monkeypatch):
    monkeypatch.setattr(run_choice, "run_seconds", _timed(10.0, 6.0))  # 4 s of each run are not training
    monkeypatch.setattr(run_choice, "fused_speedup", lambda group, data_dir: 6.0)
    announced = []
    specs = seed_sweep(["rte"], ["m"], range(1, 9))
    found = run_choice.ways(specs, None, [1, 4], gpus=1, parameters=355_000_000, fuse=3,
                            on_fuse_timing=lambda spec, k: announced.append((spec.run_id, k)))
    fused = found[2]
    # groups of 3, 3, 2: the speed-up is capped at each group's size; what is not training counts whole
    assert fused.seconds == pytest.approx(8 * 4.0 + 6 * 6.0 / 3 + 2 * 6.0 / 2)
    assert announced == [(specs[0].run_id, 3)] and run_choice.pick(found) == fused
    assert "3 group(s) of up to 3, training at 6.00×" in fused.note
    monkeypatch.setattr(run_choice, "run_seconds", lambda specs, data_dir, **_: pd.DataFrame(
        {"task": "rte", "to_do": [1] * 8, "example_epochs": 1.0, "seconds": 10.0, "train_seconds": float("nan"),
         "source": "finished runs"}))  # runs stored before their training seconds were: all of it counts
    assert run_choice.ways(specs, None, [1, 2], gpus=1, parameters=None)[2].seconds == pytest.approx(40.0)


def test_fused_lora_says_how_many_pass_the_base_at_once(monkeypatch):
    monkeypatch.setattr(run_choice, "run_seconds", _timed(10.0, 10.0))
    monkeypatch.setattr(run_choice, "fused_speedup", lambda group, data_dir: 2.0)
    lora = seed_sweep(["rte"], ["m"], range(1, 9), method="lora")
    assert "pass the base" not in run_choice.ways(lora, None, [1, 4], gpus=1, parameters=None)[2].note
    monkeypatch.setattr(run_choice, "fused_per_pass", lambda spec, members: 1)  # a base that keeps one at a time
    bounded = run_choice.ways(lora, None, [1, 4], gpus=1, parameters=100_000_000)[2]
    assert bounded.seconds == pytest.approx(40.0) and "2.00× the throughput" in bounded.note
    assert "LoRA members pass the base 1 at a time, so that the group's peak memory stays within 1.5× one run's" \
        in bounded.note


def test_a_plan_that_cannot_be_fused_says_why(monkeypatch):
    monkeypatch.setattr(run_choice, "run_seconds", _timed(10.0, 10.0))
    grouped = seed_sweep(["rte"], ["m"], range(1, 9), hparams={"group_by_length": True})
    unfusable = run_choice.ways(grouped, None, [1, 4], gpus=1, parameters=100_000_000)[2]
    assert unfusable.seconds is None and "group_by_length" in unfusable.note
