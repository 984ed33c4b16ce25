"""Bootstrap CI of the mean: reproducible, percentile method, checked against a loop."""

from __future__ import annotations

import numpy as np
import pytest

from seedscope.errors import SeedscopeError
from seedscope.metrics.resampling import bootstrap_mean_ci


def test_matches_a_plain_loop_with_the_same_draws():
    values = np.array([[0.61, 0.2], [0.64, 0.25], [0.59, 0.3], [0.7, 0.1], [0.66, 0.22]])
    low, high = bootstrap_mean_ci(values, n_boot=500, confidence=0.9, seed=11)
    rng = np.random.default_rng(11)
    index = rng.integers(0, 5, size=(500, 5))
    for m in range(2):
        means = [values[row, m].mean() for row in index]
        assert low[m] == pytest.approx(np.quantile(means, 0.05))
        assert high[m] == pytest.approx(np.quantile(means, 0.95))


def test_reproducible_and_seed_dependent():
    values = np.random.default_rng(0).random(10)
    assert bootstrap_mean_ci(values, seed=3) == bootstrap_mean_ci(values, seed=3)
    assert bootstrap_mean_ci(values, seed=3)[0] != bootstrap_mean_ci(values, seed=4)[0]


def test_interval_brackets_the_mean_and_narrows_with_confidence():
    values = np.random.default_rng(1).normal(0.8, 0.05, size=30)
    low95, high95 = bootstrap_mean_ci(values, confidence=0.95)
    low50, high50 = bootstrap_mean_ci(values, confidence=0.5)
    assert low95[0] < low50[0] < values.mean() < high50[0] < high95[0]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"confidence": 1.0}, "confidence must lie strictly between 0 and 1, not 1.0"),
        ({"confidence": 0.0}, "confidence must lie strictly between 0 and 1, not 0.0"),
        ({"confidence": float("nan")}, "confidence must lie strictly between 0 and 1, not nan"),
        ({"n_boot": 0}, "the number of resamples must be at least 1, not 0"),
    ],
)
def test_bad_settings_are_user_errors(kwargs, message):
    with pytest.raises(SeedscopeError, match=message):
        bootstrap_mean_ci(np.ones(3), **kwargs)
