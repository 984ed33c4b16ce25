"""rliable aggregates (stat-checks §1): IQM and probability of improvement."""

from __future__ import annotations


import numpy as np
import pytest

from seedscope.analysis.aggregates import interquartile_mean, probability_of_improvement
from seedscope.errors import SeedscopeError


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


def test_iqm_ci_is_rliables_stratified_bootstrap_redone_by_a_slow_loop():
    from scipy import stats as sstats

    from seedscope.analysis.aggregates import interquartile_mean_ci
    from seedscope.metrics.resampling import generator

    rng = np.random.default_rng(4)
    scores = rng.random((6, 3))
    point, low, high = interquartile_mean_ci(scores, n_boot=300, confidence=0.9, seed=11)
    draw = generator(11)
    picks = [draw.integers(0, 6, size=(300, 6)) for _ in range(3)]  # one draw of runs per task (stratum)
    replicates = [sstats.trim_mean(np.concatenate([scores[picks[t][b], t] for t in range(3)]), 0.25) for b in range(300)]
    assert point == pytest.approx(interquartile_mean(scores))
    assert (low, high) == pytest.approx(tuple(np.quantile(replicates, [0.05, 0.95])))


def test_iqm_ci_lands_in_rliables_band_and_is_reproducible():
    from seedscope.analysis.aggregates import interquartile_mean_ci

    point, low, high = interquartile_mean_ci(np.arange(80.0), n_boot=2000, seed=0)
    assert point == 39.5 and 30 < low < 35 and 44 < high < 48  # rliable, 200 reps: 31.5–46.8 and 33.4–45.8
    assert interquartile_mean_ci(np.arange(80.0), n_boot=2000, seed=0) == (point, low, high)
    with pytest.raises(SeedscopeError, match="at least 2"):
        interquartile_mean_ci([0.5])
