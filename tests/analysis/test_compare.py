"""compare_systems end to end: every statistic for every pair."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.aggregates import interquartile_mean
from seedscope.analysis.compare import compare_systems
from seedscope.analysis.significance import holm
from seedscope.errors import SeedscopeError

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


def test_compare_systems_gives_t_and_iqm_intervals_wilcoxon_and_mdd():
    from scipy import stats

    a = pd.Series([0.80, 0.82, 0.85, 0.79, 0.84], index=list("12345"))
    b = pd.Series([0.78, 0.83, 0.80, 0.77, 0.81], index=list("12345"))
    comparison = compare_systems({"A": a, "B": b}, n_boot=400, n_permutations=999, confidence=0.9, power=0.9)
    system = comparison.systems.loc["A"]
    assert (system["t_low"], system["t_high"]) == pytest.approx(stats.t.interval(0.9, 4, loc=a.mean(), scale=stats.sem(a)))
    # independently: 5 runs cut floor(5/4) = 1 per end, so the IQM is the mean of the middle three; the
    # interval is rliable's bootstrap redone by a slow loop over the same seeded draws
    assert system["iqm"] == pytest.approx((0.80 + 0.82 + 0.84) / 3, abs=1e-15)
    picks = np.random.default_rng(0).integers(0, 5, size=(400, 5))
    replicates = [np.sort(a.to_numpy()[pick])[1:4].mean() for pick in picks]
    assert (system["iqm_ci_low"], system["iqm_ci_high"]) == pytest.approx(tuple(np.quantile(replicates, [0.05, 0.95])),
                                                                           abs=1e-12)
    row = comparison.pairs.iloc[0]
    assert row["p_wilcoxon"] == pytest.approx(stats.wilcoxon(a, b).pvalue)
    diff = (a - b).to_numpy()
    assert row["mdd"] == pytest.approx((stats.norm.ppf(0.95) + stats.norm.ppf(0.9)) * diff.std(ddof=1) / math.sqrt(5))
    assert comparison.settings["power"] == 0.9


def test_runs_are_never_paired_when_told_so():
    """Each row of a score table without a run column is a run; equal row numbers are not matched seeds."""
    a = pd.Series([0.80, 0.82, 0.85], index=["1", "2", "3"])
    b = pd.Series([0.70, 0.72, 0.74], index=["1", "2", "3"])
    row = compare_systems({"A": a, "B": b}, n_boot=200, paired=False).pairs.iloc[0]
    assert not row["paired"] and row["n_matched"] == 0 and math.isnan(row["p_wilcoxon"])
    assert row["mdd"] == pytest.approx(2.801585 * math.sqrt(a.var() + b.var()) / math.sqrt(3), rel=1e-6)
    with pytest.raises(SeedscopeError, match="power"):
        compare_systems({"A": a, "B": b}, power=0)


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


def test_compare_uses_the_tasks_primary_metric(synthetic_predictions):
    """CoLA's primary metric is MCC: compare must rank on it, not on accuracy."""
    from seedscope.analysis.compare import compare_sweeps

    runs = synthetic_predictions(("cola",), n_seeds=6, n_examples=80, seed=1)  # two systems on the same examples
    first = runs["run"].isin(["42", "52", "62"])
    a, b = runs[first], runs[~first].assign(run=runs.loc[~first, "run"].map({"72": "42", "82": "52", "92": "62"}))
    comparison = compare_sweeps({"a": a, "b": b}, n_boot=50, n_permutations=50)
    assert comparison.metric == "mcc"
    assert "too few runs for an ASO verdict" in comparison.pairs["aso_verdict"].iloc[0]  # 3 runs < 5


def test_a_comparison_left_without_a_test_warns_and_keeps_the_note():
    from seedscope.errors import DegenerateRunWarning

    unmatched = {"A": pd.Series([0.8, 0.82, 0.81], index=["1", "2", "3"]), "B": pd.Series([0.7, 0.72], index=["4", "5"])}
    with pytest.warns(DegenerateRunWarning, match="A vs B: fewer than 2 matched seeds") as shown:
        comparison = compare_systems(unmatched, n_boot=200)
    degenerate = [str(w.message) for w in shown if issubclass(w.category, DegenerateRunWarning)]
    assert [note for note in comparison.notes if "matched seeds" in note] == degenerate[:1]
    assert any(note.startswith("B has 2 runs") for note in comparison.notes)  # and that B's 2 runs are too few


def test_a_bad_sweep_is_named_once():
    from seedscope.analysis.compare import compare_sweeps

    def sweep(prob):
        return pd.DataFrame({"run": ["1", "1", "2", "2"], "example_id": ["a", "b", "a", "b"],
                             "prediction": [0, 1, 0, 1], "label": [0, 1, 0, 1],
                             "prob_0": [0.9, 0.2, 0.8, prob], "prob_1": [0.1, 0.8, 0.2, 1 - prob]})

    with pytest.raises(SeedscopeError, match=r"^sweep b: run 2 example b: probability prob_0 is -0.1, outside"):
        compare_sweeps({"a": sweep(0.3), "b": sweep(-0.1)}, n_boot=20, n_permutations=20)


def test_a_sweep_with_integer_ids_pairs_its_examples_with_one_with_text_ids():
    """7 and "7" are one example: the joint bootstrap runs as it does when both sweeps have text ids."""
    from seedscope.analysis.compare import compare_sweeps

    rng = np.random.default_rng(2)
    ids, gold = rng.permutation(60) * 11, rng.integers(0, 2, 60)

    def sweep(accuracy):
        return pd.concat([pd.DataFrame({"run": f"seed{s}", "example_id": ids, "label": gold,
                                        "prediction": np.where(rng.random(60) < accuracy, gold, 1 - gold)})
                          for s in range(4)], ignore_index=True)

    a, b = sweep(0.8), sweep(0.6)
    mixed = compare_sweeps({"A": a, "B": b.astype({"example_id": str})}, n_boot=200, n_permutations=99)
    text = compare_sweeps({"A": a.astype({"example_id": str}), "B": b.astype({"example_id": str})}, n_boot=200,
                          n_permutations=99)
    assert not np.isnan(mixed.pairs["joint_delta"].iloc[0])
    pd.testing.assert_frame_equal(mixed.pairs, text.pairs)
