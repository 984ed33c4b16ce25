"""Comparing sampled systems: paired by item, sampling variance included, and the ranking-inversion probability."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from seedscope.analysis.sampled_compare import compare_samples
from seedscope.errors import SeedscopeError, UnstableEstimateWarning


def table(correct, runs=("s1",), items=3, n=4) -> pd.DataFrame:
    return pd.DataFrame({"run": [r for r in runs for _ in range(items * n)],
                         "example_id": [i for _ in runs for i in range(items) for _ in range(n)],
                         "sample": list(range(n)) * items * len(runs), "correct": correct})


A = table([1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1])  # 3/4 on every item
B = table([1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0])  # 1/4, 2/4, 1/4


def test_hand_worked_single_runs():
    pair = compare_samples({"A": A, "B": B}).pairs.loc[("A", "B")]
    d = np.array([0.5, 0.25, 0.5])
    assert pair["difference"] == pytest.approx(d.mean())
    assert pair["se"] == pytest.approx(d.std(ddof=1) / np.sqrt(3))
    # one run's variance from its samples: mean over items of c(n−c)/(n(n−1))/n, over N = 3 items
    v_a = np.mean([3 / 12 / 4] * 3) / 3
    v_b = np.mean([3 / 12 / 4, 4 / 12 / 4, 3 / 12 / 4]) / 3
    assert pair["inversion_probability"] == pytest.approx(stats.norm.cdf(-d.mean() / np.sqrt(v_a + v_b)))
    assert pair["inversion_share"] == 0.0 and pair["n_items"] == 3
    assert pair["p_value"] == pytest.approx(2 * stats.norm.sf(d.mean() / pair["se"]))


def test_one_run_variance_and_inversion_match_simulated_runs():
    """One run's variance from its samples against the spread of many simulated runs; with it, Φ(−|Δ|/sqrt(v_A + v_B))
    at the true Δ against the share of simulated run pairs ordered the other way."""
    rng = np.random.default_rng(11)
    items, n = 40, 4
    rate_a, rate_b = rng.uniform(0.3, 0.8, items), rng.uniform(0.3, 0.8, items)

    def runs(rates, count):
        rows = [(f"r{r}", i, s, float(rng.random() < p)) for r in range(count) for i, p in enumerate(rates)
                for s in range(n)]
        return pd.DataFrame(rows, columns=["run", "example_id", "sample", "correct"])

    observed_a, observed_b = runs(rate_a, 1), runs(rate_b, 1)
    systems = compare_samples({"A": observed_a, "B": observed_b}, estimator="avg@n").systems
    many_a = runs(rate_a, 300).groupby("run")["correct"].mean().to_numpy()
    many_b = runs(rate_b, 300).groupby("run")["correct"].mean().to_numpy()
    assert systems.loc["A", "run_variance"] == pytest.approx(many_a.var(), rel=0.3)
    assert systems.loc["B", "run_variance"] == pytest.approx(many_b.var(), rel=0.3)
    delta = rate_a.mean() - rate_b.mean()
    truth = np.mean(np.sign(delta) * (many_a[:, None] - many_b[None, :]) < 0)
    expected = stats.norm.cdf(-abs(delta) / np.sqrt(systems["run_variance"].sum()))
    assert expected == pytest.approx(truth, abs=0.05)


def test_several_runs_use_their_spread_and_the_observed_share():
    two = ("s1", "s2")
    a = table([1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1] + [1, 0, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1], runs=two)
    b = table([1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0] + [1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1], runs=two)
    result = compare_samples({"A": a, "B": b}, estimator="pass@2")
    assert result.systems.loc["A", "n_runs"] == 2
    scores_a, scores_b = [], []
    for frame, out in ((a, scores_a), (b, scores_b)):
        for _, rows in frame.groupby("run"):
            counts = rows.groupby("example_id")["correct"].agg(["size", "sum"])
            out.append(np.mean([1 - (n - c) * (n - c - 1) / (n * (n - 1)) for n, c in counts.to_numpy()]))
    assert result.systems.loc["A", "run_variance"] == pytest.approx(np.var(scores_a, ddof=1))
    delta = result.pairs.iloc[0]["difference"]
    gaps = np.sign(delta) * (np.array(scores_a)[:, None] - np.array(scores_b)[None, :])
    assert result.pairs.iloc[0]["inversion_share"] == pytest.approx(np.mean(gaps < 0) + 0.5 * np.mean(gaps == 0))


def test_a_single_run_of_pass_at_k_has_no_inversion_probability():
    with pytest.warns(UnstableEstimateWarning):
        result = compare_samples({"A": A, "B": B}, estimator="pass@2")
    assert np.isnan(result.pairs.iloc[0]["inversion_probability"])
    assert any("two runs or more" in note for note in result.notes)


@pytest.mark.parametrize("estimator, message", [
    ("pass@9", r"k = 9 is more than the samples per item \(n = 4\)"),
    ("best@3", "unknown sampling estimator"),
    ("maj@2", "no prediction column"),
])
def test_bad_estimators(estimator, message):
    with pytest.raises(SeedscopeError, match=message):
        compare_samples({"A": A, "B": B}, estimator=estimator)


def test_items_are_paired_and_unshared_ones_noted():
    shifted = B.assign(example_id=B["example_id"] + 1)
    with pytest.warns(UnstableEstimateWarning, match="2 item"):
        result = compare_samples({"A": A, "B": shifted})
    assert result.pairs.iloc[0]["n_items"] == 2
    with pytest.raises(SeedscopeError, match="share 0 item"):
        compare_samples({"A": A, "B": B.assign(example_id=B["example_id"] + 10)})
