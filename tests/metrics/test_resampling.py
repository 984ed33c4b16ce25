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


def _plain_means(values: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    """The resampled column means as the estimator made them before drawing in chunks: every position at once."""
    index = np.random.default_rng(seed).integers(0, len(values), size=(n_boot, len(values)))
    return values[index].mean(axis=1)


@pytest.mark.parametrize("shape", [(7,), (50, 1), (50, 5), (301, 3)])
def test_drawing_in_chunks_gives_the_means_of_drawing_at_once_to_the_last_bit(monkeypatch, shape):
    from seedscope.metrics import resampling

    values = np.random.default_rng(2).random(shape) * np.logspace(-3, 3, shape[-1] if len(shape) > 1 else 1)
    expected = _plain_means(values, 2000, 5)
    for chunk in (1 << 22, 997, 1):  # everything at once; chunks of a few resamples; one resample a chunk
        monkeypatch.setattr(resampling, "DRAW_CHUNK", chunk)
        drawn = resampling.replicates(lambda means: means, values, n_resamples=2000, seed=5, of_means=True)
        assert np.array_equal(drawn, expected)


def test_a_rowwise_statistic_gets_the_same_resamples_in_chunks(monkeypatch):
    from seedscope.metrics import resampling

    a, b = np.random.default_rng(0).random(37), np.random.default_rng(1).random(23)

    def statistic(x, y):  # row by row: a sort and sums over contiguous rows
        return np.sort(x, axis=1)[:, :3].sum(axis=1) - np.sort(y, axis=1)[:, -2:].sum(axis=1)

    whole = resampling.replicates(statistic, a, b, n_resamples=1001, seed=4)
    monkeypatch.setattr(resampling, "ROWWISE_AT_ONCE", 100)
    monkeypatch.setattr(resampling, "DRAW_CHUNK", 100)
    assert np.array_equal(resampling.replicates(statistic, a, b, n_resamples=1001, seed=4, rowwise=True), whole)
    sized = resampling.replicates(lambda x: x.mean(axis=1), a, n_resamples=300, seed=4, size=80, rowwise=True)
    monkeypatch.setattr(resampling, "ROWWISE_AT_ONCE", 1 << 24)
    assert np.array_equal(resampling.replicates(lambda x: x.mean(axis=1), a, n_resamples=300, seed=4, size=80), sized)


def test_a_bootstrap_of_ten_thousand_runs_keeps_its_memory_bounded():
    import tracemalloc

    values = np.random.default_rng(3).random((10_000, 5))
    tracemalloc.start()
    bootstrap_mean_ci(values, n_boot=10_000)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 400e6  # drawn at once: 10⁸ positions (800 MB) and their values (4 GB)
