"""Expected maximum performance (stat-checks §6) and the seeds-needed curve."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.planning import expected_max_performance, seeds_needed


# --------------------------------------------------------------------------- §6 expected validation performance


def test_expected_max_reference_values():
    four = expected_max_performance([0.1, 0.2, 0.3, 0.4])
    assert four["expected_max"].tolist() == pytest.approx([0.25, 0.3125, 0.34375, 0.36171875])
    assert four["std"].tolist() == pytest.approx([0.111803, 0.092702, 0.074739, 0.061392], abs=1e-6)
    five = expected_max_performance([0.85, 0.80, 0.90, 0.70, 0.88])
    assert five["expected_max"].tolist() == pytest.approx([0.826, 0.8644, 0.87928, 0.88648, 0.8905696])
    assert five["std"].tolist() == pytest.approx([0.071442, 0.046310, 0.030807, 0.022208, 0.017083], abs=1e-6)
    without = expected_max_performance([0.1, 0.2, 0.3, 0.4], replace=False)
    assert without["expected_max"].tolist() == pytest.approx([0.25, 1 / 3, 0.375, 0.4])


@pytest.mark.parametrize("replace", [True, False])
def test_expected_max_matches_enumeration_with_ties(replace):
    scores = [0.5, 0.7, 0.7, 0.2, 0.9]
    table = expected_max_performance(scores, 4 if replace else 5, replace=replace)
    for n in table.index:
        draws = itertools.product(scores, repeat=n) if replace else itertools.combinations(scores, n)
        maxima = [max(d) for d in draws]
        assert table.loc[n, "expected_max"] == pytest.approx(sum(maxima) / len(maxima))


def test_seeds_needed_shrinks_and_is_reproducible():
    values = [0.80, 0.82, 0.85, 0.79, 0.84, 0.76, 0.83]
    table = seeds_needed(values, [2, 5, 20, 80], n_boot=3000, seed=0)
    assert table["mean_ci_width"].is_monotonic_decreasing
    assert table.loc[80, "var_ci_width"] < table.loc[5, "var_ci_width"]
    pd.testing.assert_frame_equal(table, seeds_needed(values, [2, 5, 20, 80], n_boot=3000, seed=0))
    assert not table.equals(seeds_needed(values, [2, 5, 20, 80], n_boot=3000, seed=1))
    # the resampled VAR is the population std of the drawn seeds
    assert table.loc[80, "var_ci_low"] < np.std(values) < table.loc[80, "var_ci_high"]


# --------------------------------------------------------------------------- items and samples under sampling


def test_sampling_plan_hand_worked():
    from seedscope.analysis.planning import sampling_plan

    # Var(x) = 0.04, E[σ²] = 0.16: K = 1 → SE² = 0.2/N; K = 4 → 0.08/N; at 100 items z·sqrt(0.2/100)
    plan = sampling_plan(0.04, 0.16, items=100, samples=[1, 4], targets=[0.05])
    z = 1.959963984540054
    assert plan.loc[1, "half_width"] == pytest.approx(z * np.sqrt(0.002))
    assert plan.loc[4, "half_width"] == pytest.approx(z * np.sqrt(0.0008))
    assert plan.loc[1, "items_for_0.05"] == int(np.ceil(z**2 * 0.2 / 0.0025))
    assert plan.loc[4, "items_for_0.05"] == int(np.ceil(z**2 * 0.08 / 0.0025))
    detect = sampling_plan(0.04, 0.16, items=100, samples=[4], targets=[0.05], detect=True, power=0.8)
    assert detect.loc[4, "mdd"] == pytest.approx((z + 0.8416212335729143) * np.sqrt(0.0008))


def test_sampling_plan_half_width_is_met_by_simulation():
    """The items a plan asks for give intervals of about the target half-width on simulated data."""
    from seedscope.analysis.planning import sampling_plan

    rng = np.random.default_rng(3)
    plan = sampling_plan(0.05, 0.2, items=10, samples=[4], targets=[0.03])  # E[p(1 − p)] = 0.25 − Var(p)
    items = int(plan.loc[4, "items_for_0.03"])
    means = []
    for _ in range(400):
        rates = np.clip(rng.normal(0.5, np.sqrt(0.05), size=items), 0, 1)
        means.append(rng.binomial(4, rates).mean() / 4)
    assert 1.96 * np.std(means) == pytest.approx(0.03, rel=0.15)


def test_sampling_plan_bad_input():
    from seedscope.analysis.planning import sampling_plan
    from seedscope.errors import SeedscopeError

    with pytest.raises(SeedscopeError, match="non-negative"):
        sampling_plan(-1.0, 0.1, items=10)
    with pytest.raises(SeedscopeError, match="at least one item"):
        sampling_plan(0.1, 0.1, items=0)
