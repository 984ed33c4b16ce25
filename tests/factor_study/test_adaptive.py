"""Adaptive run count: the stopping rule by hand, the schedule, and the simulation on real scores."""

from __future__ import annotations

import numpy as np
import pytest

from seedscope.factor_study.adaptive import AdaptiveSchedule, first_converged_step, simulate_adaptive
from seedscope.io import read_score_table
from seedscope.factor_study.scores import study_from_table
from seedscope.factor_study.importance import FactorGrid, FactorStudy
from seedscope.errors import SeedscopeError


def column(values):
    return np.array(values, dtype=float)[:, None]


def test_first_converged_step_by_hand():
    # changes: 0.5, 0.01, 0.2, 0.01, 0.01 → two settled changes in a row end at step 5
    trace = column([0.0, 0.5, 0.51, 0.71, 0.72, 0.73])
    assert first_converged_step(trace, 0.05, 2) == 5
    assert first_converged_step(trace, 0.05, 1) == 2
    assert first_converged_step(trace, 0.05, 3) == -1
    assert first_converged_step(column([0.0, 0.01]), 0.05, 2) == -1


def test_every_quantity_must_settle():
    trace = np.array([[0.0, 0.0], [0.01, 0.5], [0.02, 0.51], [0.03, 0.52]])
    assert first_converged_step(trace, 0.05, 2) == 3
    batched = np.stack([trace, trace[:, ::-1] * 0])
    assert first_converged_step(batched, 0.05, 2).tolist() == [3, 2]


def test_schedule_sizes_and_validation():
    assert AdaptiveSchedule(start=10, batch=10, cap=35).sizes().tolist() == [10, 20, 30, 35]
    assert AdaptiveSchedule().sizes(available=40).tolist() == [10, 20, 30, 40]
    with pytest.raises(SeedscopeError, match="only 5 mitigation runs"):
        AdaptiveSchedule().sizes(available=5)
    for bad in (dict(tolerance=0), dict(start=1), dict(batch=0), dict(cap=5)):
        with pytest.raises(SeedscopeError):
            AdaptiveSchedule(**bad)


def test_next_size_adds_batches_until_settled():
    schedule = AdaptiveSchedule(start=2, batch=2, cap=10, patience=1, tolerance=0.05)
    mean, std = np.full(10, 0.8), np.full(10, 0.01)
    assert schedule.next_size(mean[:1], std[:1], 0.02) == 2
    assert schedule.next_size(mean[:2], std[:2], 0.02) == 4  # one step: nothing to compare yet
    assert schedule.next_size(mean[:4], std[:4], 0.02) is None  # constant: settled at once
    noisy = np.array([0.8, 0.9, 0.7, 1.0, 0.6, 0.9, 0.7, 1.0, 0.6, 0.9])
    assert schedule.next_size(noisy[:4], std[:4], 0.02) == 6
    assert schedule.next_size(noisy, std, 0.02) is None  # cap reached


def test_simulation_with_a_constant_factor_stops_at_the_first_check():
    grid = np.tile(np.array([0.7, 0.8]), (30, 1))
    study = FactorStudy({"f": FactorGrid("f", grid)}, [0.6, 0.9])
    row = simulate_adaptive(study, AdaptiveSchedule(start=4, batch=4, cap=30), repeats=20).loc["f"]
    assert row["m_used_max"] == 12  # 4 → 8 → 12: two settled changes
    assert row["runs_used_mean"] == 24 and row["runs_saved_mean"] == 1000 - 24
    assert row["within_tolerance_share"] == 1.0 and row["converged_share"] == 1.0


def test_simulation_on_real_scores_saves_runs(data_dir):
    study = study_from_table(read_score_table(data_dir / "factor-runs" / "sst2_bert.csv"))
    result = simulate_adaptive(study, AdaptiveSchedule(tolerance=0.05), repeats=300, seed=1)
    assert (result["saved_share"] > 0.3).all()
    assert (result["m_used_max"] <= 100).all()
    # the importance of all recorded runs: the reference aggregates of ../shared/data/factor-runs/README.md
    expected = {"split": 0.7200, "label": 1.2134, "initialisation": -0.6110, "order": -0.5578}
    assert result["importance_all"].round(4).to_dict() == expected
    # with all 100 groups the reference-size estimate is the full one
    assert result.loc["split", "reference_within_tolerance_share"] == 1.0
    assert result.loc["label", "within_tolerance_share"] > 0.6
    again = simulate_adaptive(study, AdaptiveSchedule(tolerance=0.05), repeats=300, seed=1)
    assert again.equals(result)
