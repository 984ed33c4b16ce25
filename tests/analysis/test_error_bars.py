"""Error bars over examples and seeds: the reference values of stat-checks.md §7, and slow loops on random cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from seedscope.analysis.error_bars import (
    clustered_standard_error,
    minimum_detectable_difference,
    standard_error,
    t_interval,
    variance_split,
)
from seedscope.errors import SeedscopeError

X = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1]


def test_reference_values_of_miller_2024():
    assert standard_error(X)[0] == pytest.approx(0.163299, abs=1e-6)
    clusters = [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]
    assert clustered_standard_error(X, clusters, small_sample=False)[0] == pytest.approx(0.167332, abs=1e-6)
    assert clustered_standard_error(X, clusters)[0] == pytest.approx(0.187083, abs=1e-6)
    b = np.array([1, 1, 0, 1, 0, 0, 0, 0, 1, 0])
    assert standard_error(np.array(X) - b)[0] == pytest.approx(0.2)  # SE of the paired difference


def test_lm_eval_closed_form_stderr():
    import random

    random.seed(42)
    values = [random.random() for _ in range(1000)]
    assert standard_error(values)[0] == pytest.approx(0.009101642967669129, rel=1e-12)


def test_one_example_per_cluster_gives_the_plain_standard_error():
    rng = np.random.default_rng(0)
    values = rng.random((4, 30))
    assert clustered_standard_error(values, np.arange(30)) == pytest.approx(standard_error(values))


def test_clustered_standard_error_matches_a_slow_loop_on_random_cases():
    rng = np.random.default_rng(1)
    for _ in range(20):
        n = int(rng.integers(5, 60))
        values = rng.integers(0, 2, (3, n)).astype(float)
        clusters = rng.integers(0, max(2, n // 3), n).astype(str)
        for run, row in enumerate(values):
            mean = sum(row) / n
            groups = {}
            for value, cluster in zip(row, clusters):
                groups[cluster] = groups.get(cluster, 0.0) + (value - mean)
            c = len(groups)
            slow = math.sqrt(sum(total**2 for total in groups.values())) / n * math.sqrt(c / (c - 1))
            assert clustered_standard_error(values, clusters)[run] == pytest.approx(slow, abs=1e-12)
            assert standard_error(values)[run] == pytest.approx(stats.sem(row), abs=1e-12)


def test_standard_error_is_numpys_sample_variance_to_the_last_bit():
    """The reused-buffer SE gives exactly numpy's ``var(ddof=1)`` on 0/1, integer and float scores, strided or not."""
    rng = np.random.default_rng(4)
    for n in (2, 7, 8, 9, 127, 128, 129, 1000, 65_537):
        share = rng.random()
        correct = rng.random((3, 2 * n)) < share
        for values in (correct, correct[:, ::2], correct.astype(np.int8), correct * rng.random((3, 2 * n))):
            expected = np.sqrt(np.array([row.var(ddof=1) for row in values]) / values.shape[1])
            np.testing.assert_array_equal(standard_error(values), expected)


def test_variance_split_by_hand():
    split = variance_split([0.6, 0.7, 0.8], [0.03, 0.04, 0.05])
    assert split["seed_variance"] == pytest.approx(0.01)
    assert split["example_variance"] == pytest.approx((0.0009 + 0.0016 + 0.0025) / 3)
    assert split["total_variance"] == pytest.approx(0.01 + 0.05 / 30)
    assert split["seed_share"] == pytest.approx(0.01 / (0.01 + 0.05 / 30))
    assert split["dominant"] == "seeds"
    assert variance_split([0.7, 0.7], [0.05, 0.05])["dominant"] == "examples"
    assert variance_split([0.7, 0.7], [0.0, 0.0])["dominant"] == "none"


def test_t_interval_matches_scipy():
    rng = np.random.default_rng(2)
    for size in (2, 3, 5, 12):
        values = rng.normal(0.8, 0.05, size)
        expected = stats.t.interval(0.9, size - 1, loc=values.mean(), scale=stats.sem(values))
        assert t_interval(values, 0.9) == pytest.approx(expected)
    low, high = t_interval([0.5, 0.7], 0.95)  # by hand: t_{0.975, 1} = 12.7062, s/√2 = 0.1
    assert (low, high) == pytest.approx((0.6 - 1.270620, 0.6 + 1.270620), abs=1e-5)


def test_minimum_detectable_difference():
    # (1.959964 + 0.841621) · 0.02 / √5
    assert minimum_detectable_difference(0.02, 5) == pytest.approx(2.801585 * 0.02 / math.sqrt(5), abs=1e-7)
    assert minimum_detectable_difference(0.02, 20, power=0.9) == pytest.approx(
        (stats.norm.ppf(0.975) + stats.norm.ppf(0.9)) * 0.02 / math.sqrt(20)
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: standard_error([1.0]), "at least two examples"),
        (lambda: standard_error([1.0, np.nan]), "NaN"),
        (lambda: clustered_standard_error(X, [0] * 10), "at least two clusters"),
        (lambda: clustered_standard_error(X, [0, 1]), "2 cluster labels for 10"),
        (lambda: clustered_standard_error(X, [0, 1] * 4 + [None, 1]), "no cluster"),
        (lambda: variance_split([0.5], [0.1]), "at least 2"),
        (lambda: t_interval([0.5], 0.95), "at least 2"),
        (lambda: minimum_detectable_difference(0.1, 5, power=1.0), "power"),
        (lambda: minimum_detectable_difference(0.1, 0), "at least one"),
        (lambda: minimum_detectable_difference(-0.1, 5), "non-negative"),
    ],
)
def test_bad_inputs_are_refused(call, message):
    with pytest.raises(SeedscopeError, match=message):
        call()


def test_standard_errors_a_block_of_runs_at_a_time_are_numpys_run_by_run(monkeypatch):
    from seedscope.metrics import micro

    rng = np.random.default_rng(7)
    for values in (rng.random((40, 33)) < 0.6, rng.random((40, 33))):
        expected = np.array([np.sqrt(row.astype(float).var(ddof=1) / 33) for row in values])
        for block in (1 << 22, 100, 1):
            monkeypatch.setattr(micro, "BLOCK_VALUES", block)
            assert np.array_equal(standard_error(values), expected)
