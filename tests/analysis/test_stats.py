"""Seed-level statistics against ../shared/reference/stat-checks.md, hand values and slow implementations."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from seedscope.analysis.stats import (
    adjust_p_values,
    aso,
    bonferroni,
    compare_systems,
    expected_max_performance,
    holm,
    interquartile_mean,
    joint_bootstrap,
    mcnemar,
    mean_difference_ci,
    paired_permutation_test,
    probability_of_improvement,
    seeds_needed,
    violation_ratio,
)
from seedscope.errors import SeedscopeError

# stat-checks §2 inputs
DEEPSIG_A = [1.277148, -0.052781, 2.046166, 0.649878, 0.323529]
DEEPSIG_B = [0.887163, 0.859588, -0.636524, 0.015696, -2.242685]
A5 = [0.80, 0.82, 0.85, 0.79, 0.84]
B5 = [0.78, 0.83, 0.80, 0.77, 0.81]
E4 = [0.60, 0.75, 0.80, 0.95]
F4 = [0.70, 0.72, 0.78, 0.82]


# --------------------------------------------------------------------------- §1 rliable


def test_rliable_aggregates():
    x = np.array([[1, 2], [2, 2], [1, 1], [2, 1]])
    y = np.array([[1, 1], [2, 2], [3, 3]])
    assert interquartile_mean(x) == 1.5 and interquartile_mean(y) == 2
    assert probability_of_improvement(x, y) == pytest.approx(1 / 3)
    assert probability_of_improvement(y, x) == pytest.approx(2 / 3)
    assert interquartile_mean(np.arange(80).reshape(5, 16)) == 39.5
    assert interquartile_mean([[0.1, 0.5, 0.9], [0.2, 0.6, 1.2], [0.3, 0.7, 2.0]]) == pytest.approx(0.6)
    assert interquartile_mean([0.05, 0.1, 0.2, 0.3, 0.45, 0.5, 0.6, 0.8, 0.9, 5.0]) == pytest.approx(0.475)
    assert probability_of_improvement([[1], [2], [3]], [[2], [2], [2]]) == 0.5
    x2 = [[0.9, 0.1], [0.8, 0.2], [0.7, 0.3]]
    y2 = [[0.6, 0.25], [0.75, 0.15]]
    assert probability_of_improvement(x2, y2) == pytest.approx(0.666667, abs=1e-6)


@pytest.mark.parametrize("case", range(5))
def test_iqm_and_poi_match_slow_loops(case):
    rng = np.random.default_rng(case)
    x = rng.integers(0, 5, size=(int(rng.integers(2, 9)), 3)).astype(float)
    y = rng.integers(0, 5, size=(int(rng.integers(2, 9)), 3)).astype(float)
    flat = sorted(x.ravel())
    cut = int(0.25 * len(flat))
    assert interquartile_mean(x) == pytest.approx(sum(flat[cut : len(flat) - cut]) / (len(flat) - 2 * cut))
    per_task = []
    for t in range(3):
        wins = sum(1.0 if a > b else 0.5 if a == b else 0.0 for a in x[:, t] for b in y[:, t])
        per_task.append(wins / (len(x) * len(y)))
    assert probability_of_improvement(x, y) == pytest.approx(sum(per_task) / 3)


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


def test_aso_with_one_score_runs():
    """deepsig issue #16: n = 1 gives a meaningless but finite bound; it must not crash."""
    result = aso([8], [5, 5, 8, 7, 8], seed=0)
    assert 0 <= result.eps_min <= 1 and result.violation_ratio == pytest.approx(violation_ratio([8], [5, 5, 8, 7, 8]))


# --------------------------------------------------------------------------- §2 multiple comparisons


def test_holm_against_reference_and_not_deepsig_order():
    # stat-checks lists the step-down values before the running maximum; ours adds the maximum
    reference = {
        (0.01, 0.04, 0.03): [0.03, 0.04, 0.06],
        (0.04, 0.01, 0.03): [0.04, 0.03, 0.06],
        (0.2, 0.01, 0.03, 0.04): [0.2, 0.04, 0.09, 0.08],
    }
    deepsig = {(0.04, 0.01, 0.03): [0.06, 0.04, 0.03], (0.2, 0.01, 0.03, 0.04): [0.09, 0.08, 0.2, 0.04]}
    for p, stepped in reference.items():
        order = np.argsort(p)
        expected = np.empty(len(p))
        expected[order] = np.maximum.accumulate(np.array(stepped)[order])
        assert holm(p) == pytest.approx(expected)
        if p in deepsig:
            assert not np.allclose(holm(p), deepsig[p])
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert bonferroni([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.12, 0.09])
    assert bonferroni([0.2, 0.01, 0.03, 0.04]) == pytest.approx([0.8, 0.04, 0.12, 0.16])
    assert bonferroni([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def sequential_holm_rejections(p, alpha):
    """Holm's procedure as a loop: reject the sorted p_(i) while p_(i) ≤ α/(m − i + 1)."""
    rejected = set()
    for rank, index in enumerate(np.argsort(p, kind="stable")):
        if p[index] > alpha / (len(p) - rank):
            break
        rejected.add(int(index))
    return rejected


@pytest.mark.parametrize("case", range(20))
def test_holm_decisions_match_the_sequential_procedure(case):
    rng = np.random.default_rng(case)
    p = rng.random(int(rng.integers(1, 10))) ** 3
    adjusted = holm(p)
    for alpha in (0.01, 0.05, 0.1):
        assert {int(i) for i in np.flatnonzero(adjusted <= alpha)} == sequential_holm_rejections(p, alpha)
    assert (adjusted >= p).all() and (adjusted <= 1).all()
    assert adjust_p_values(p, "bh") == pytest.approx(stats.false_discovery_control(p))


def test_bad_p_values_and_method():
    with pytest.raises(SeedscopeError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])
    with pytest.raises(SeedscopeError, match="unknown p-value adjustment"):
        adjust_p_values([0.1], "fdr")


# --------------------------------------------------------------------------- §4 McNemar


def test_mcnemar_reference_and_no_division_by_zero():
    refs = np.array([1, 0, 1])
    right_1, right_2 = np.array([1, 1, 1]) == refs, np.array([1, 0, 1]) == refs
    chi2 = mcnemar(right_1, right_2, exact=False)
    assert (chi2["b"], chi2["c"]) == (0, 1)
    assert chi2["statistic"] == 1.0 and chi2["p_value"] == pytest.approx(0.31731050786291115, abs=1e-15)
    assert mcnemar(right_1, right_2)["method"] == "exact binomial"  # 1 discordant pair < 25
    assert mcnemar(right_1, right_2)["p_value"] == 1.0
    none = mcnemar(right_1, right_1)
    assert none["statistic"] == 0.0 and none["p_value"] == 1.0


def test_mcnemar_exact_by_hand_and_chi_square_when_many():
    a = np.array([True] * 8 + [False] * 2)
    b = np.array([False] * 8 + [True] * 2)
    exact = mcnemar(a, b)
    # b = 8, c = 2: P = 2 · P(X ≤ 2), X ~ Bin(10, ½) = 2 · 56/1024
    assert exact["p_value"] == pytest.approx(2 * (1 + 10 + 45) / 1024)
    many = mcnemar(np.r_[np.ones(30, bool), np.zeros(10, bool)], np.r_[np.zeros(30, bool), np.ones(10, bool)])
    assert many["method"] == "chi-square" and many["statistic"] == pytest.approx(400 / 40)


# --------------------------------------------------------------------------- §5 MultiBERTs multibootstrap

LABELS = np.array([1, 0, 1, 1, 0, 1, 0, 0])
BASE = np.array([[1, 0, 1, 1, 0, 0, 0, 1], [1, 0, 0, 1, 0, 1, 0, 0]]) == LABELS  # intervention F
TREATED = np.array([[1, 0, 1, 1, 0, 1, 0, 0], [1, 1, 1, 1, 0, 1, 0, 0]]) == LABELS  # intervention T


def test_multibootstrap_without_resampling_is_exact():
    result = joint_bootstrap(BASE, TREATED, paired_seeds=True, resample="none", n_boot=10)
    assert result.mean_a == pytest.approx(0.8125) and result.mean_b == pytest.approx(0.9375)
    assert result.delta == pytest.approx(-0.125)
    assert result.ci_delta == pytest.approx((-0.125, -0.125))
    reverse = joint_bootstrap(TREATED, BASE, paired_seeds=True, resample="none", n_boot=10)
    assert reverse.p_not_better == pytest.approx(1 / 11)  # never 0 (MultiBERTs floors at 1/nboot)


@pytest.mark.parametrize(
    ("paired", "delta", "p"), [(True, 0.11638, 0.29), (False, 0.12019, 0.283)]
)
def test_multibootstrap_band(paired, delta, p):
    result = joint_bootstrap(TREATED, BASE, paired_seeds=paired, n_boot=1000, seed=0)
    assert result.delta == pytest.approx(delta, abs=0.02)
    assert result.p_not_better == pytest.approx(p, abs=0.05)
    assert result.ci_delta[0] == pytest.approx(-0.25 if paired else -0.1875, abs=0.07)
    if paired:
        assert result.mean_a == pytest.approx(0.93481, abs=0.02) and result.mean_b == pytest.approx(0.81844, abs=0.02)
        assert result.ci_b[1] == 1.0 and result.ci_a[1] == 1.0


def slow_joint_bootstrap(a, b, n_boot, seed, paired):
    rng = np.random.default_rng(seed)
    deltas = []
    for _ in range(n_boot):
        seeds_a = rng.integers(0, len(a), len(a))
        seeds_b = seeds_a if paired else rng.integers(0, len(b), len(b))
        examples = rng.integers(0, a.shape[1], a.shape[1])
        deltas.append(a[np.ix_(seeds_a, examples)].mean() - b[np.ix_(seeds_b, examples)].mean())
    return np.array(deltas)


@pytest.mark.parametrize("paired", [True, False])
def test_joint_bootstrap_matches_a_slow_loop_in_distribution(paired):
    rng = np.random.default_rng(9)
    a = (rng.random((4, 60)) < 0.75).astype(float)
    b = (rng.random((4, 60)) < 0.65).astype(float)
    slow = slow_joint_bootstrap(a, b, 4000, 1, paired)
    fast = joint_bootstrap(a, b, paired_seeds=paired, n_boot=4000, seed=2)
    assert fast.delta == pytest.approx(slow.mean(), abs=0.005)
    assert fast.ci_delta[0] == pytest.approx(np.quantile(slow, 0.025), abs=0.015)
    assert fast.ci_delta[1] == pytest.approx(np.quantile(slow, 0.975), abs=0.015)


def test_joint_bootstrap_reproducible():
    first = joint_bootstrap(TREATED, BASE, paired_seeds=True, n_boot=300, seed=4)
    assert first == joint_bootstrap(TREATED, BASE, paired_seeds=True, n_boot=300, seed=4)
    assert first != joint_bootstrap(TREATED, BASE, paired_seeds=True, n_boot=300, seed=5)


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


# --------------------------------------------------------------------------- bootstraps over seeds, tests


def test_mean_difference_ci_paired_and_reproducible():
    a = np.array([0.80, 0.82, 0.85, 0.79, 0.84])
    shifted = mean_difference_ci(a, a - 0.02, paired=True, n_boot=500, seed=0)
    assert shifted == pytest.approx({"delta": 0.02, "ci_low": 0.02, "ci_high": 0.02})
    unpaired = mean_difference_ci(a, a - 0.02, paired=False, n_boot=500, seed=0)
    assert unpaired["ci_low"] < 0.02 < unpaired["ci_high"]
    assert unpaired == mean_difference_ci(a, a - 0.02, paired=False, n_boot=500, seed=0)
    assert unpaired != mean_difference_ci(a, a - 0.02, paired=False, n_boot=500, seed=1)
    with pytest.raises(SeedscopeError, match="matched seeds"):
        mean_difference_ci(a, a[:3], paired=True)


def test_paired_permutation_test_is_exact_for_few_seeds():
    a, b = np.array(A5), np.array(B5)
    d = a - b
    flips = [np.array(signs) * d for signs in itertools.product([1, -1], repeat=5)]
    expected = np.mean([abs(f.mean()) >= abs(d.mean()) - 1e-12 for f in flips])
    assert paired_permutation_test(a, b) == pytest.approx(expected)
    with pytest.raises(SeedscopeError, match="matched seeds"):
        paired_permutation_test(a, b[:4])


def test_seeds_needed_shrinks_and_is_reproducible():
    values = [0.80, 0.82, 0.85, 0.79, 0.84, 0.76, 0.83]
    table = seeds_needed(values, [2, 5, 20, 80], n_boot=3000, seed=0)
    assert table["mean_ci_width"].is_monotonic_decreasing
    assert table.loc[80, "var_ci_width"] < table.loc[5, "var_ci_width"]
    pd.testing.assert_frame_equal(table, seeds_needed(values, [2, 5, 20, 80], n_boot=3000, seed=0))
    assert not table.equals(seeds_needed(values, [2, 5, 20, 80], n_boot=3000, seed=1))
    # the resampled VAR is the population std of the drawn seeds
    assert table.loc[80, "var_ci_low"] < np.std(values) < table.loc[80, "var_ci_high"]


# --------------------------------------------------------------------------- compare_systems


def test_compare_systems_end_to_end():
    rng = np.random.default_rng(0)
    runs = [f"seed_{i}" for i in range(5)]
    examples = [f"e{i}" for i in range(80)]
    per_example = {
        name: pd.DataFrame((rng.random((5, 80)) < p).astype(float), index=runs, columns=examples)
        for name, p in (("A", 0.85), ("B", 0.6), ("C", 0.62))
    }
    per_run = {name: frame.mean(axis=1) for name, frame in per_example.items()}
    comparison = compare_systems(per_run, per_example, metric="accuracy", n_boot=500, n_permutations=999)
    pairs = comparison.pairs
    assert list(pairs.index) == [("A", "B"), ("A", "C"), ("B", "C")]
    assert pairs["paired"].all() and (pairs["n_matched"] == 5).all()
    assert pairs.loc[("A", "B"), "delta"] == pytest.approx(per_run["A"].mean() - per_run["B"].mean())
    assert pairs.loc[("A", "B"), "prob_improvement"] == 1.0
    assert pairs.loc[("A", "B"), "p_permutation"] == pytest.approx(2 / 32)  # exact: all 5 differences positive
    assert pairs["p_permutation_holm"].tolist() == pytest.approx(holm(pairs["p_permutation"]))
    assert comparison.systems.loc["A", "iqm"] == pytest.approx(interquartile_mean(per_run["A"]))
    assert len(comparison.mcnemar) == 15
    document = comparison.to_dict()
    json.dumps(document, allow_nan=False)
    assert document == compare_systems(per_run, per_example, metric="accuracy", n_boot=500, n_permutations=999).to_dict()


def test_compare_systems_unmatched_runs_are_unpaired():
    comparison = compare_systems(
        {"A": pd.Series([0.8, 0.82, 0.81], index=["1", "2", "3"]), "B": pd.Series([0.7, 0.72], index=["4", "5"])},
        n_boot=200,
    )
    row = comparison.pairs.iloc[0]
    assert not row["paired"] and row["n_matched"] == 0 and math.isnan(row["p_permutation"])
    assert any("matched seeds" in note for note in comparison.notes)
    with pytest.raises(SeedscopeError, match="at least two systems"):
        compare_systems({"A": pd.Series([0.1, 0.2])})
    with pytest.raises(SeedscopeError, match="NaN"):
        compare_systems({"A": pd.Series([0.1, np.nan]), "B": pd.Series([0.1, 0.2])})
