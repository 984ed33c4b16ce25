"""Almost stochastic order against stat-checks §2 (deepsig) and an exact Riemann sum."""

from __future__ import annotations


import numpy as np
import pytest

from seedscope.analysis.aso import aso, violation_ratio
from seedscope.errors import SeedscopeError

# stat-checks §2 inputs
DEEPSIG_A = [1.277148, -0.052781, 2.046166, 0.649878, 0.323529]
DEEPSIG_B = [0.887163, 0.859588, -0.636524, 0.015696, -2.242685]
A5 = [0.80, 0.82, 0.85, 0.79, 0.84]
B5 = [0.78, 0.83, 0.80, 0.77, 0.81]
E4 = [0.60, 0.75, 0.80, 0.95]
F4 = [0.70, 0.72, 0.78, 0.82]


# --------------------------------------------------------------------------- §2 ASO


def deepsig_grid_ratio(a, b, dt=0.005):
    """deepsig ≥ 1.2.4's grid: t = dt, 2dt, …; lower inverse CDF; the first grid point is dropped."""
    a, b = np.sort(a), np.sort(b)
    t = np.arange(dt, 1, dt)
    f = a[np.clip(np.ceil(len(a) * t).astype(int) - 1, 0, len(a) - 1)]
    g = b[np.clip(np.ceil(len(b) * t).astype(int) - 1, 0, len(b) - 1)]
    diff = g - f
    total = np.sum(diff**2 * dt)
    diff[f >= g] = 0
    return np.sum(diff[1:] ** 2 * dt) / total


def test_deepsig_grid_values_are_understood():
    """Our slow grid emulation gives stat-checks' deepsig numbers; ours integrates exactly instead."""
    assert deepsig_grid_ratio(DEEPSIG_B, DEEPSIG_A) == pytest.approx(0.984232, abs=1e-6)
    assert deepsig_grid_ratio(B5, A5) == pytest.approx(0.995984, abs=1e-6)
    assert deepsig_grid_ratio(B5, A5, dt=0.001) == pytest.approx(0.999199, abs=1e-6)
    assert deepsig_grid_ratio(E4, F4) == pytest.approx(0.351734, abs=1e-6)
    assert deepsig_grid_ratio(F4, E4) == pytest.approx(0.641088, abs=1e-6)
    assert deepsig_grid_ratio([1, 2, 3], [2, 3, 4]) == pytest.approx(0.994975, abs=1e-6)
    assert deepsig_grid_ratio([1, 4], [2, 3]) == pytest.approx(0.497487, abs=1e-6)


def test_violation_ratio_exact_values():
    assert violation_ratio(DEEPSIG_A, DEEPSIG_B) == 0.0
    assert violation_ratio(DEEPSIG_B, DEEPSIG_A) == 1.0  # deepsig's grid: 0.984232
    assert violation_ratio(A5, B5) == 0.0
    assert violation_ratio(B5, A5) == 1.0  # deepsig: 0.995984 (dt 0.005) / 0.999199 (dt 0.001)
    assert violation_ratio(E4, F4) == pytest.approx(0.354610, abs=1e-6)  # stat-checks "exact continuous"
    assert violation_ratio(E4, F4) + violation_ratio(F4, E4) == pytest.approx(1.0)
    assert violation_ratio([1, 2, 3], [2, 3, 4]) == 1.0
    assert violation_ratio([2, 3, 4], [1, 2, 3]) == 0.0
    assert violation_ratio([1, 4], [2, 3]) == 0.5
    assert violation_ratio([1, 2], [2, 1]) == 0.5  # identical distributions: no division by zero


@pytest.mark.parametrize("case", range(6))
def test_violation_ratio_matches_a_fine_riemann_sum(case):
    rng = np.random.default_rng(case)
    a = rng.normal(size=int(rng.integers(1, 9)))
    b = rng.normal(0.3, size=int(rng.integers(1, 9)))
    t = (np.arange(200_000) + 0.5) / 200_000
    f = np.sort(a)[np.ceil(len(a) * t).astype(int) - 1]
    g = np.sort(b)[np.ceil(len(b) * t).astype(int) - 1]
    gap = g - f
    expected = np.sum(np.where(gap > 0, gap**2, 0)) / np.sum(gap**2)
    assert violation_ratio(a, b) == pytest.approx(expected, abs=1e-4)


@pytest.mark.parametrize(
    ("a", "b", "median"), [(DEEPSIG_A, DEEPSIG_B, 0.226), (A5, B5, 0.309), (E4, F4, 0.948)]
)
def test_aso_lands_in_the_deepsig_band(a, b, median):
    """stat-checks: ε_min with another RNG should land within ± 0.01 of deepsig's median."""
    values = [aso(a, b, n_boot=20_000, seed=s).eps_min for s in range(3)]
    assert np.mean(values) == pytest.approx(median, abs=0.01)


def test_aso_reverse_reproducible_and_bonferroni():
    assert aso(DEEPSIG_B, DEEPSIG_A, seed=0).eps_min == 1.0
    first, again, other = (aso(E4, F4, n_boot=2000, seed=s) for s in (5, 5, 6))
    assert first == again and first.eps_min != other.eps_min
    corrected = aso(E4, F4, n_boot=2000, seed=5, n_comparisons=3)
    assert corrected.confidence == pytest.approx(1 - 0.05 / 3)  # deepsig uses 0.95 + 0.05/3 (wrong for k > 2)
    assert corrected.eps_min >= first.eps_min
    assert aso(A5, B5, seed=0).a_better() and not aso(B5, A5, seed=0).a_better()


def test_aso_with_one_score_is_refused():
    """deepsig issue #16: n = 1 gives a meaningless bound, so seedscope refuses it; the ratio itself is defined."""
    with pytest.raises(SeedscopeError, match=r"ASO \(scores A\) needs at least 2 value\(s\), got 1"):
        aso([8], [5, 5, 8, 7, 8], seed=0)
    assert violation_ratio([8], [5, 5, 8, 7, 8]) == pytest.approx(violation_ratio([8, 8], [5, 5, 8, 7, 8]))


def test_the_resamples_are_sorted_by_counting_as_a_sort_of_the_resampled_scores_would(monkeypatch):
    """ε* of each resample: positions into the sorted scores, counted, are the resampled scores sorted."""
    from seedscope.analysis.aso import _violation_ratios
    from seedscope.metrics import resampling

    rng = np.random.default_rng(8)
    a, b = np.sort(np.round(rng.random(40), 2)), np.sort(np.round(rng.random(25), 2))  # ties included
    sorted_draws = resampling.replicates(
        lambda x, y: _violation_ratios(np.sort(x, axis=1), np.sort(y, axis=1)), a, b, n_resamples=3000, seed=2)
    ratio = float(_violation_ratios(a, b))
    scale = np.sqrt(40 * 25 / 65)
    assert aso(a, b, n_boot=3000, seed=2).sigma == float(np.std(scale * (sorted_draws - ratio)))
    monkeypatch.setattr(resampling, "ROWWISE_AT_ONCE", 1000)  # thousands of runs: the same resamples, in chunks
    monkeypatch.setattr(resampling, "DRAW_CHUNK", 5000)
    assert aso(a, b, n_boot=3000, seed=2).sigma == pytest.approx(float(np.std(scale * (sorted_draws - ratio))),
                                                                  rel=1e-13)
