"""The one interval estimator reproduces, digit for digit, every interval seedscope computed before it existed.

Each reference below is the resampling an interval function ran on its own (copied as it was),
drawn with the same seed; the estimator must return exactly the same numbers on random inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special, stats

from seedscope.analysis.aggregates import interquartile_mean_ci
from seedscope.analysis.aso import _violation_ratios, aso
from seedscope.analysis.differences import mean_difference_ci
from seedscope.analysis.error_bars import t_interval
from seedscope.analysis.planning import seeds_needed
from seedscope.errors import SeedscopeError
from seedscope.factor_study.importance import bootstrap_importance, importance_from_groups
from seedscope.metrics.resampling import bootstrap_mean_ci, interval, replicates

SEEDS = [0, 7, 123]


def old_percentile(draws, confidence):
    alpha = (1 - confidence) / 2
    return np.quantile(draws, [alpha, 1 - alpha], axis=0)


def old_indices(rng, n_boot, size):
    return rng.integers(0, size, size=(n_boot, size))


@pytest.mark.parametrize("seed", SEEDS)
def test_mean_ci_over_runs(seed):
    values = np.random.default_rng(seed).normal(size=(7, 3))
    means = values[old_indices(np.random.default_rng(seed), 500, 7)].mean(axis=1)
    np.testing.assert_array_equal(bootstrap_mean_ci(values, n_boot=500, seed=seed), old_percentile(means, 0.95))


@pytest.mark.parametrize("seed", SEEDS)
def test_unpaired_and_paired_differences(seed):
    rng = np.random.default_rng(seed + 1)
    a, b = rng.normal(size=6), rng.normal(size=9)
    draw = np.random.default_rng(seed)
    means_a = a[old_indices(draw, 400, 6)].mean(axis=1)
    means_b = b[old_indices(draw, 400, 9)].mean(axis=1)
    low, high = old_percentile(means_a - means_b, 0.9)
    result = mean_difference_ci(a, b, paired=False, n_boot=400, confidence=0.9, seed=seed)
    assert (result["ci_low"], result["ci_high"]) == (low, high)
    c = rng.normal(size=6)
    gaps = (a - c)[:, None][old_indices(np.random.default_rng(seed), 400, 6)].mean(axis=1)
    result = mean_difference_ci(a, c, paired=True, n_boot=400, confidence=0.9, seed=seed)
    assert (result["ci_low"], result["ci_high"]) == tuple(float(v[0]) for v in old_percentile(gaps, 0.9))


@pytest.mark.parametrize("seed", SEEDS)
def test_stratified_iqm(seed):
    values = np.random.default_rng(seed).normal(size=(8, 3))
    rng = np.random.default_rng(seed)
    columns = [values[old_indices(rng, 300, 8), task] for task in range(3)]
    draws = stats.trim_mean(np.concatenate(columns, axis=1), 0.25, axis=1)
    _, low, high = interquartile_mean_ci(values, n_boot=300, seed=seed)
    assert (low, high) == tuple(old_percentile(draws, 0.95))


@pytest.mark.parametrize("seed", SEEDS)
def test_factor_importance(seed):
    rng = np.random.default_rng(seed)
    mean, std = rng.normal(size=12), rng.random(12)
    index = old_indices(np.random.default_rng(seed), 300, 12)
    draws = importance_from_groups(mean[index], std[index], 0.3)[2]
    assert bootstrap_importance(mean, std, 0.3, n_boot=300, seed=seed) == tuple(old_percentile(draws, 0.95))


@pytest.mark.parametrize("seed", SEEDS)
def test_paired_importance_difference(seed):
    rng = np.random.default_rng(seed)
    pair = rng.normal(size=(2, 10, 2))
    pair[..., 1] = abs(pair[..., 1])
    index = old_indices(np.random.default_rng(seed + 3), 200, 10)
    old = [importance_from_groups(v[index, 0], v[index, 1], 0.5)[2] for v in pair]

    def difference(drawn):
        return importance_from_groups(drawn[0], drawn[1], 0.5)[2] - importance_from_groups(drawn[2], drawn[3], 0.5)[2]

    new = interval(difference, (pair[0][:, 0], pair[0][:, 1], pair[1][:, 0], pair[1][:, 1]), n_resamples=200,
                   seed=seed + 3)
    np.testing.assert_array_equal(new, old_percentile(old[0] - old[1], 0.95))


@pytest.mark.parametrize("seed", SEEDS)
def test_seeds_needed_m_out_of_n(seed):
    values = np.random.default_rng(seed).normal(size=5)
    frame = seeds_needed(values, [3, 12], n_boot=250, seed=seed)
    for size in (3, 12):
        drawn = values[np.random.default_rng([seed, size]).integers(0, 5, size=(250, size))]
        (m_low, m_high), (v_low, v_high) = old_percentile(drawn.mean(axis=1), 0.95), old_percentile(drawn.std(axis=1), 0.95)
        assert tuple(frame.loc[size, ["mean_ci_low", "mean_ci_high", "var_ci_low", "var_ci_high"]]) == (
            m_low, m_high, v_low, v_high)


@pytest.mark.parametrize("method", ["percentile", "bca", "basic"])
def test_pool_small_path_is_scipy_bootstrap_of_positions(method):
    values = np.random.default_rng(2).random((300, 2))
    theta = lambda means: means[..., 0] / means[..., 1]  # noqa: E731
    old = stats.bootstrap((np.arange(300),), lambda index, axis=-1: theta(values[index].mean(axis=-2)),
                          n_resamples=400, method=method, vectorized=True, batch=70, rng=np.random.default_rng(5))
    new = interval(theta, values, of_means=True, method=method, batch=70, n_resamples=400, seed=5)
    assert new == (old.confidence_interval.low, old.confidence_interval.high)


def test_pool_moment_path():
    values = np.random.default_rng(3).random((20_000, 2))
    covariance = np.atleast_2d(np.cov(values, rowvar=False, bias=True)) / len(values)
    means = np.random.default_rng(4).multivariate_normal(values.mean(axis=0), covariance, size=300, method="eigh")
    new = interval(lambda m: m[:, 0] - m[:, 1], values, of_means=True, moments=True, n_resamples=300, seed=4)
    np.testing.assert_array_equal(new, old_percentile(means[:, 0] - means[:, 1], 0.95))


def test_aso_replicates():
    rng = np.random.default_rng(9)
    a, b = np.sort(rng.normal(size=6)), np.sort(rng.normal(size=8))
    draw = np.random.default_rng(1)
    old = _violation_ratios(np.sort(a[old_indices(draw, 200, 6)], axis=1), np.sort(b[old_indices(draw, 200, 8)], axis=1))
    new = replicates(lambda x, y: _violation_ratios(np.sort(x, axis=1), np.sort(y, axis=1)), a, b, n_resamples=200, seed=1)
    np.testing.assert_array_equal(new, old)
    assert aso(a, b, n_boot=200, seed=1).violation_ratio == float(_violation_ratios(a, b))


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99])
def test_t_interval(confidence):
    values = np.random.default_rng(4).normal(size=(6, 3))
    alpha = (1 - confidence) / 2
    half = special.stdtrit(5, 1 - alpha) * values.std(axis=0, ddof=1) / np.sqrt(6)
    np.testing.assert_array_equal(interval(None, values, method="t", confidence=confidence),
                                  (values.mean(axis=0) - half, values.mean(axis=0) + half))
    assert t_interval(values[:, 0], confidence) == (values[0:, 0].mean() - half[0], values[:, 0].mean() + half[0])
    # the macro summary's form, (1 + confidence) / 2, is the same quantile at these levels
    assert special.stdtrit(5, (1 + confidence) / 2) == special.stdtrit(5, 1 - alpha)


def test_bad_settings():
    with pytest.raises(SeedscopeError, match="unknown interval method 'bootstrap'"):
        interval(None, np.ones(3), method="bootstrap")
    with pytest.raises(SeedscopeError, match="t interval is the interval of one sample's mean"):
        interval(np.mean, np.ones(3), method="t")
    with pytest.raises(SeedscopeError, match="moment path gives a percentile interval"):
        interval(None, np.ones((3, 1)), of_means=True, moments=True, method="bca")
    with pytest.raises(SeedscopeError, match="confidence must lie strictly between 0 and 1"):
        interval(None, np.ones(3), confidence=1.0)


def test_the_replaced_helpers_still_work_with_a_deprecation_warning():
    from seedscope.metrics.resampling import generator, interval_of, percentile_interval, resampled_column_means

    draws = np.random.default_rng(0).normal(size=(200, 2))
    with pytest.warns(DeprecationWarning, match="interval_of"):
        np.testing.assert_array_equal(percentile_interval(draws.T, 0.9, axis=1), interval_of(draws, 0.9))
    values = np.random.default_rng(1).random((50, 2))
    with pytest.warns(DeprecationWarning, match="replicates"):
        means = resampled_column_means(values, 30, generator(3))
    np.testing.assert_array_equal(means, replicates(lambda m: m, values, of_means=True, moments=True,
                                                    n_resamples=30, seed=3))
