"""Joint seed × example bootstrap (stat-checks §5) and mean differences over seeds."""

from __future__ import annotations


import numpy as np
import pytest

from seedscope.analysis.differences import joint_bootstrap, mean_difference_ci
from seedscope.errors import SeedscopeError


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


@pytest.mark.parametrize("paired", [True, False])
@pytest.mark.parametrize("resample", ["both", "examples"])
def test_the_moment_matched_example_draw_gives_the_exact_draws_intervals(monkeypatch, paired, resample):
    """From LARGE_N examples on the examples' counts are drawn from their exact mean and covariance: the same
    intervals as drawing every count, to Monte Carlo precision (here N = 12,000, correlated systems)."""
    from seedscope.analysis import differences

    rng = np.random.default_rng(3)
    n, ease = 12_000, rng.beta(3, 1.5, 12_000)
    a = (rng.random((6, n)) < ease).astype(float)
    b = (rng.random((6, n)) < np.clip(ease - 0.02, 0, 1)).astype(float)
    options = dict(paired_seeds=paired, resample=resample, n_boot=4000, seed=1)
    fast = joint_bootstrap(a, b, **options)
    monkeypatch.setattr(differences, "LARGE_N", 10**9)
    exact = joint_bootstrap(a, b, **options)
    width = exact.ci_delta[1] - exact.ci_delta[0]
    assert fast.delta == pytest.approx(exact.delta, abs=0.05 * width)
    assert fast.ci_delta[0] == pytest.approx(exact.ci_delta[0], abs=0.08 * width)
    assert fast.ci_delta[1] == pytest.approx(exact.ci_delta[1], abs=0.08 * width)
    assert fast.ci_a[1] - fast.ci_a[0] == pytest.approx(exact.ci_a[1] - exact.ci_a[0], rel=0.1)
