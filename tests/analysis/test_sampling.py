"""Sampled runs: per-run estimators, their spread across seeds, the item-clustered SE (Miller 2024), stability."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.error_bars import clustered_standard_error
from seedscope.analysis.sampling import analyze_samples, default_ks, variance_components
from seedscope.errors import SeedscopeError, UnevenSamplesWarning
from seedscope.metrics import sampled


def random_table(seed: int = 0, runs: int = 3, items: int = 25, n: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rates = rng.beta(0.8, 0.8, size=items)
    rows = []
    for run in range(runs):
        for item, rate in enumerate(rates):
            for sample in range(n):
                right = rng.random() < rate
                rows.append((f"seed{run}", f"q{item}", sample, float(right), "A" if right else str(rng.integers(1, 3))))
    return pd.DataFrame(rows, columns=["run", "example_id", "sample", "correct", "prediction"])


def test_default_ks():
    assert default_ks(1) == [1]
    assert default_ks(8) == [1, 2, 5, 8]
    assert default_ks(10) == [1, 2, 5, 10]
    assert default_ks(64) == [1, 2, 5, 10, 20, 50, 64]


def test_hand_worked_run():
    table = pd.DataFrame({"run": "s1", "example_id": [1] * 4 + [2] * 4, "sample": list(range(4)) * 2,
                          "correct": [1, 0, 0, 1, 0, 0, 0, 1], "prediction": list("45547786")})
    result = analyze_samples(table, k=[1, 2], n_boot=100)
    row = result.per_run.iloc[0]
    assert row["pass@2"] == pytest.approx((5 / 6 + 1 / 2) / 2)
    assert row["pass^2"] == pytest.approx((1 / 6 + 0) / 2)
    assert row["maj@2"] == pytest.approx((0.5 + 0.25) / 2)  # item 2: the 6 ties with a 7 or the 8 half the time
    assert row["avg@n"] == pytest.approx(0.375)
    # CON: item 1 has 2 + 2 agreeing ordered pairs of 12, item 2 has 2 of 12; CCON: 2 of 12 and 0
    assert result.micro.loc["s1", "con"] == pytest.approx((4 / 12 + 2 / 12) / 2)
    assert result.micro.loc["s1", "ccon"] == pytest.approx((2 / 12) / 2)
    assert result.stability["category"].tolist() == ["unstable", "unstable"]
    assert result.notes == []


def test_per_run_means_and_spread_across_seeds():
    table = random_table()
    result = analyze_samples(table, k=[1, 3], n_boot=200)
    for run, rows in table.groupby("run"):
        counts = rows.groupby("example_id")["correct"].agg(["size", "sum"])
        expected = sampled.pass_at_k(counts["size"], counts["sum"], 3).mean()
        assert result.per_run.loc[run, "pass@3"] == pytest.approx(expected)
    spread = result.per_run["pass@3"]
    assert result.macro.loc["pass@3", "var_published"] == pytest.approx(spread.std(ddof=0))
    assert result.macro.loc["pass@3", "std_sample"] == pytest.approx(spread.std(ddof=1))
    assert result.to_dict()["pass@k"] == {"1": pytest.approx(result.per_run["pass@1"].mean()),
                                          "3": pytest.approx(spread.mean())}
    assert set(result.to_dict()["pass^k"]) == {"1", "3"}


def test_standard_error_is_the_item_clustered_one_of_the_samples():
    """avg@n's SE over items equals the cluster-robust SE of the 0/1 samples clustered by item (Miller 2024)."""
    table = random_table(runs=1, items=30, n=5)
    result = analyze_samples(table, k=[1], n_boot=100)
    ordered = table.sort_values(["example_id", "sample"])
    clustered = clustered_standard_error(ordered["correct"].to_numpy(), ordered["example_id"].to_numpy())[0]
    assert result.errors.loc["avg@n", "se"] == pytest.approx(clustered)
    assert result.variance["se"] == pytest.approx(clustered)


def test_variance_components_hand_worked():
    # rates 1/2 and 1/4 with n = 4: S² = 1/32; σ² = 2·2/12 = 1/3 and 1·3/12 = 1/4; sampling = mean(σ²/4) = 7/96
    parts = variance_components([4, 4], [2, 1])
    assert parts["within"] == pytest.approx(7 / 24)
    assert parts["sampling"] == pytest.approx(7 / 96)
    assert parts["between"] == 0.0  # 1/32 < 7/96: the items' spread is all sampling noise
    assert parts["se"] == pytest.approx(np.sqrt(1 / 32 / 2))


def test_variance_components_recover_the_truth_by_simulation():
    rng = np.random.default_rng(7)
    rates = rng.beta(2, 2, size=4000)
    n = np.full(rates.size, 8)
    parts = variance_components(n, rng.binomial(8, rates))
    assert parts["between"] == pytest.approx(rates.var(), abs=0.004)
    assert parts["within"] == pytest.approx(np.mean(rates * (1 - rates)), abs=0.004)


def test_uneven_samples_are_a_note_and_per_item_estimates():
    table = random_table(runs=1, items=6, n=4)
    table = table[~((table["example_id"] == "q0") & (table["sample"] == 3))]
    with pytest.warns(UnevenSamplesWarning):
        result = analyze_samples(table, k=[1, 2], n_boot=100)
    assert any("different numbers of samples (n = 3 … 4)" in note for note in result.notes)
    q0 = table[table["example_id"] == "q0"]["correct"]
    expected = sampled.pass_at_k([3], [int(q0.sum())], 2)[0]
    assert result.per_item.loc[("seed0", "q0"), "pass@2"] == pytest.approx(expected)
    with pytest.raises(SeedscopeError, match=r"k = 4 is more than the samples of item 'q0' in run 'seed0' \(n = 3"), \
            pytest.warns(UnevenSamplesWarning):
        analyze_samples(table, k=[4])


def test_k_beyond_n_and_no_predictions():
    table = random_table(runs=1, items=4, n=4)
    with pytest.raises(SeedscopeError, match=r"k = 5 is more than the samples per item \(n = 4\)"):
        analyze_samples(table, k=5)
    result = analyze_samples(table.drop(columns="prediction"), k=2, n_boot=100)
    assert "maj@2" not in result.per_run and result.micro["con"].isna().all()
    assert result.to_dict()["maj@k"] == {}
