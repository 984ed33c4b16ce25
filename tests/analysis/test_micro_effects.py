"""The micro part at many runs: today's numbers kept where they are exact, the matrices summarised beyond 300 runs.

``fixtures/seed_effects_before.json`` holds what seedscope computed for these cases before the
matrices gave way to a sample of pairs (commit bbc6934): the means, macro metrics and intervals
must be the same to the last digit, the sampled pair spreads within their stated error.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.micro_effects import MICRO_COLUMNS, PAIR_KINDS
from seedscope.analysis.seed_effects import analyze
from seedscope.errors import SeedscopeError
from seedscope.metrics import micro
from seedscope.metrics.pairs import EXACT_PAIR_RUNS, PAIR_SAMPLE

BEFORE = json.loads((Path(__file__).parent / "fixtures" / "seed_effects_before.json").read_text())


def classification(n_runs: int, n_examples: int, n_classes: int = 3, seed: int = 52) -> pd.DataFrame:
    """S runs of varied skill on N examples, with class probabilities (the cases of the fixture)."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, n_classes, n_examples)
    skill = rng.uniform(0.3, 0.9, n_runs)
    frames = []
    for s in range(n_runs):
        right = rng.random(n_examples) < skill[s]
        pred = np.where(right, gold, rng.integers(0, n_classes, n_examples))
        frame = pd.DataFrame({"run": f"r{s}", "example_id": np.arange(n_examples), "prediction": pred, "label": gold})
        p = rng.dirichlet(np.ones(n_classes), n_examples)
        for c in range(n_classes):
            frame[f"prob_{c}"] = p[:, c]
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def regression(n_runs: int, n_examples: int, seed: int = 7) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    gold = rng.normal(size=n_examples)
    return pd.concat([pd.DataFrame({"run": f"r{s}", "example_id": np.arange(n_examples),
                                    "prediction": gold + rng.normal(0, 0.5 + s / n_runs, n_examples), "label": gold})
                      for s in range(n_runs)], ignore_index=True)


CASES = {"c500": lambda: (classification(500, 60), {}), "c12": lambda: (classification(12, 40, seed=3), {}),
         "r40": lambda: (regression(40, 30), {"task_type": "regression"})}


def _same(a, b) -> bool:
    """Equal to the last digits numpy's summation order leaves (a t quantile or a sum differs by 1e-13 across numpy
    and scipy releases), or both NaN."""
    return (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)) or a == pytest.approx(
        b, rel=1e-11, abs=1e-13)


@pytest.mark.parametrize("case", list(CASES))
def test_means_macro_metrics_and_intervals_are_those_computed_before(case):
    table, options = CASES[case]()
    result = analyze(table, n_boot=2000, seed=1, **options)
    before = BEFORE[case]
    for metric, row in before["macro"].items():
        for statistic, value in row.items():
            assert _same(float(result.macro.loc[metric, statistic]), value), (metric, statistic)
    row = result.micro.iloc[0]
    for name in ("ccon", "prob_con", "n_runs", "n_examples", "n_pairs"):
        assert _same(float(row[name]), before["micro"][name]), name
    # regression CON: the closed form over standardised runs, not the mean of the correlation matrix (last digit)
    assert row["con"] == (pytest.approx(before["micro"]["con"], abs=1e-13) if case == "r40" else before["micro"]["con"])
    for kind in PAIR_KINDS:
        exact, got, se = before["micro"][f"{kind}_pair_std"], row[f"{kind}_pair_std"], row[f"{kind}_pair_std_se"]
        if result.matrix_sampled:  # 500 runs: sampled, within its stated error of the exact spread
            assert abs(got - exact) < 4 * se and se < exact / 50, kind
        else:
            assert _same(float(got), exact) and np.isnan(se), kind


def test_up_to_the_limit_the_matrices_are_exact_and_beyond_a_sample_summarises_them():
    table = classification(40, 30)
    exact = analyze(table, n_boot=200, seed=3)
    assert not exact.matrix_sampled and exact.con_matrix.shape == (40, 40) and exact.pair_sample is None
    assert np.isnan(exact.micro["n_pairs_sampled"].iloc[0]) and list(exact.micro.columns) == list(MICRO_COLUMNS)
    sampled = analyze(table, n_boot=200, matrix_runs=39, pair_sample=5000, seed=3)
    assert sampled.matrix_sampled and sampled.con_matrix is None and sampled.ccon_matrix is None
    assert sampled.prob_matrix is None and len(sampled.pair_sample) == 5000
    assert list(sampled.pair_sample.columns) == ["run_a", "run_b", "con", "ccon", "prob_con"]
    for name in ("con", "ccon", "prob_con"):  # the means are exact either way
        assert sampled.micro[name].iloc[0] == exact.micro[name].iloc[0]
    pd.testing.assert_frame_equal(sampled.macro, exact.macro)
    pd.testing.assert_frame_equal(sampled.run_agreement, exact.run_agreement)
    for kind in PAIR_KINDS:
        row = sampled.micro.iloc[0]
        assert abs(row[f"{kind}_pair_std"] - exact.micro[f"{kind}_pair_std"].iloc[0]) < 4 * row[f"{kind}_pair_std_se"]
    # each run's agreement is the mean of its matrix row off the diagonal
    matrix = exact.con_matrix.to_numpy()
    off_diagonal = (matrix.sum(axis=1) - 1) / 39
    assert exact.run_agreement["con"].to_numpy() == pytest.approx(off_diagonal, abs=1e-12)
    least = sampled.least_agreeing(3)
    assert least.index.tolist() == exact.run_agreement["con"].nsmallest(3).index.tolist()


def test_the_json_summarises_the_matrix_at_many_runs():
    document = analyze(classification(40, 30), n_boot=200, matrix_runs=10, pair_sample=1000).to_dict(top_k=5)
    assert document["con_matrix"] is None and document["ccon_matrix"] is None and document["con_matrix_sampled"]
    assert document["micro"]["n_pairs_sampled"] == 1000 and document["micro"]["con_pair_std_se"] > 0
    assert set(document["pair_distribution"]) == {"con", "ccon", "prob_con"}
    assert set(document["pair_distribution"]["con"]) == {"min", "q05", "q25", "median", "q75", "q95", "max"}
    assert [set(row) for row in document["least_agreeing_runs"]] == [{"run", "con", "ccon"}] * 5
    exact = analyze(classification(6, 30), n_boot=200).to_dict()
    assert len(exact["con_matrix"]) == 6 and exact["con_matrix_sampled"] is False
    assert exact["micro"]["n_pairs_sampled"] is None and exact["micro"]["con_pair_std_se"] is None
    values = micro.pair_values(np.array(exact["con_matrix"]))
    assert exact["pair_distribution"]["con"]["median"] == pytest.approx(float(np.median(values)))


def test_the_regression_sample_and_agreement():
    table = regression(30, 20)
    exact = analyze(table, task_type="regression", n_boot=200)
    sampled = analyze(table, task_type="regression", n_boot=200, matrix_runs=20, pair_sample=4000)
    assert list(sampled.pair_sample.columns) == ["run_a", "run_b", "con", "ccon"]
    row, exact_row = sampled.micro.iloc[0], exact.micro.iloc[0]
    assert row["con"] == exact_row["con"] and row["ccon"] == pytest.approx(exact_row["ccon"], abs=1e-12)
    assert abs(row["con_pair_std"] - exact_row["con_pair_std"]) < 4 * row["con_pair_std_se"]
    off = exact.con_matrix.to_numpy()
    assert exact.run_agreement["con"].to_numpy() == pytest.approx((off.sum(axis=1) - 1) / 29, abs=1e-12)
    ccon = exact.ccon_matrix.to_numpy()
    expected = (ccon.sum(axis=1) - np.diag(ccon)) / 29
    assert exact.run_agreement["ccon"].to_numpy() == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize(("option", "value"), [("matrix_runs", 1), ("matrix_runs", 2.5), ("pair_sample", 0),
                                               ("pair_sample", True)])
def test_bad_pair_settings_are_one_sentence(option, value):
    with pytest.raises(SeedscopeError, match=f"^{option} must be a whole number .* at least 2, not"):
        analyze(classification(4, 10), **{option: value})


def test_the_defaults():
    assert EXACT_PAIR_RUNS == 300 and PAIR_SAMPLE == 20_000
