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

    a = synthetic_predictions(("cola",), n_seeds=3, n_examples=80, seed=1)
    b = synthetic_predictions(("cola",), n_seeds=3, n_examples=80, seed=2)
    comparison = compare_sweeps({"a": a, "b": b}, n_boot=50, n_permutations=50)
    assert comparison.metric == "mcc"
    assert "too few runs for an ASO verdict" in comparison.pairs["aso_verdict"].iloc[0]  # 3 runs < 5
