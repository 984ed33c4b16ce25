"""Careful numbers: runs of different tasks are not compared, intervals stay in their metric's range, and a result
of fewer than three runs says it is unreliable."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.checks import FEW_RUNS, check_one_task, warn_few_runs
from seedscope.analysis.compare import compare_sweeps, compare_systems
from seedscope.analysis.planning import seeds_needed
from seedscope.errors import ClippedIntervalWarning, SeedscopeError, UnstableEstimateWarning
from seedscope.io import read_predictions
from seedscope.metrics.macro import bounds_of, summarize_runs
from seedscope.metrics.resampling import clipped
from seedscope.predictions import align_runs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _runs(labels, predictions_by_run, ids=None) -> pd.DataFrame:
    ids = range(len(labels)) if ids is None else ids
    return pd.DataFrame([{"run": run, "example_id": i, "prediction": p, "label": g}
                         for run, predictions in predictions_by_run.items()
                         for i, p, g in zip(ids, predictions, labels)])


def test_rte_against_cb_is_refused_naming_both():
    """The shipped RTE runs and CB runs both number their examples from 0: the gold labels tell them apart."""
    rte = read_predictions(sorted((EXAMPLES / "rte").glob("*.csv")))
    cb = read_predictions(EXAMPLES / "cb.csv")
    with pytest.raises(SeedscopeError) as refused:
        compare_sweeps({"rte": rte, "cb": cb}, n_boot=50, n_permutations=9)
    message = str(refused.value)
    assert message.startswith("rte and cb are not runs of one task: their gold labels differ on ")
    assert "(rte: entailment, not_entailment; cb: contradiction, entailment, neutral)" in message
    assert "\n" not in message


def test_one_task_on_the_same_examples_passes_and_the_rest_is_refused():
    a = align_runs(_runs(["x", "y", "x"], {"1": ["x", "y", "y"], "2": ["x", "x", "x"]}))
    b = align_runs(_runs(["x", "y", "x"], {"1": ["y", "y", "x"], "2": ["x", "y", "x"]}))
    check_one_task({"A": (a, "rte"), "B": (b, "rte")})  # the same task and gold labels: nothing to say
    check_one_task({"A": (a, None), "B": (b, "rte")})  # a task not named is no conflict
    with pytest.raises(SeedscopeError, match=r"^A and B are not runs of one task: their tasks differ \(rte, cb\)"):
        check_one_task({"A": (a, "rte"), "B": (b, "cb")})
    elsewhere = align_runs(_runs(["x", "y", "x"], {"1": ["x", "y", "y"], "2": ["x", "x", "x"]}, ids=[7, 8, 9]))
    with pytest.raises(SeedscopeError, match="A and B are not runs of one task on the same examples: they share no"):
        check_one_task({"A": (a, None), "B": (elsewhere, None)})
    relabelled = align_runs(_runs(["y", "y", "x"], {"1": ["x", "y", "y"], "2": ["x", "x", "x"]}))
    with pytest.raises(SeedscopeError, match="their gold labels differ on 1 of the 3 example ids they share;"):
        check_one_task({"A": (a, None), "B": (relabelled, None)})
    as_text = align_runs(_runs(["x", "y", "x"], {"1": ["y", "y", "x"], "2": ["x", "y", "x"]}, ids=["0", "1", "2"]))
    check_one_task({"A": (a, None), "B": (as_text, None)})  # ids 0 and "0" are one example


def test_clipped_moves_an_interval_into_the_range_and_says_so():
    low, high, moved = clipped(np.array([-0.1, 0.2]), np.array([0.5, 1.3]), (0.0, 1.0))
    assert low.tolist() == [0.0, 0.2] and high.tolist() == [0.5, 1.0] and moved.tolist() == [True, True]
    with pytest.warns(ClippedIntervalWarning, match=r"^the interval ran past its range and is clipped to \[0, 1\]"):
        clipped(1.2, 1.3, (0.0, 1.0), "the interval")
    assert clipped(-5.0, 9.0, None)[2].tolist() is False


def test_bounds_are_known_for_metrics_and_estimators_and_only_when_the_values_fit():
    assert bounds_of("accuracy", [0.7, 0.8]) == (0.0, 1.0) and bounds_of("mcc", [-0.2, 0.4]) == (-1.0, 1.0)
    assert bounds_of("pass@4", [0.5]) == bounds_of("G-Pass@4_0.5", [0.5]) == bounds_of("avg@n", [0.5]) == (0.0, 1.0)
    assert bounds_of("acc", [75.3, 80.1]) is None  # percentages: seedscope knows no range for them
    assert bounds_of("bleu", [0.3]) is None


def test_a_t_interval_of_two_runs_stays_in_range_and_is_marked():
    """The issue's case: accuracy 0.70 and 0.76 give the t interval 0.3488–1.1112; it is clipped to 1 and says so."""
    with pytest.warns(ClippedIntervalWarning, match="the t interval of accuracy over 2 runs ran past its range"):
        summary = summarize_runs(pd.DataFrame({"accuracy": [0.70, 0.76], "score": [70.0, 76.0]}), n_boot=100)
    accuracy, score = summary.loc["accuracy"], summary.loc["score"]
    assert accuracy["t_low"] == pytest.approx(0.3488, abs=1e-4) and accuracy["t_high"] == 1.0 and accuracy["t_clipped"]
    assert score["t_high"] == pytest.approx(111.12, abs=0.01) and not score["t_clipped"]  # a range it cannot know


def test_compare_marks_few_runs_and_extrapolated_seeds():
    per_run = {"A": pd.Series([0.70, 0.76], index=["s1", "s2"]), "B": pd.Series([0.71, 0.72, 0.74], index=["s1", "s2", "s3"])}
    with pytest.warns(UnstableEstimateWarning):
        comparison = compare_systems(per_run, metric="accuracy", n_boot=100, n_permutations=9)
    assert comparison.systems.loc["A", "t_high"] == 1.0 and comparison.systems.loc["A", "t_clipped"]
    assert any(note.startswith("A has 2 runs:") and "unreliable" in note for note in comparison.notes)
    assert not any(note.startswith("B has") for note in comparison.notes)
    needed = seeds_needed(per_run["B"], sizes=[2, 3, 5], n_boot=100)
    assert needed["extrapolated"].tolist() == [False, False, True]
    with pytest.warns(UnstableEstimateWarning, match=f"they need {FEW_RUNS} runs at least"):
        warn_few_runs("C", 1, "its spread")


def test_no_interval_of_a_small_random_analysis_leaves_its_range():
    """Random runs of 2 to 4 seeds: every interval of every metric lies inside the metric's range."""
    import seedscope

    rng = np.random.default_rng(5)
    for trial in range(20):
        n_runs, n = int(rng.integers(2, 5)), int(rng.integers(6, 30))
        labels = rng.integers(0, 2, n)
        runs = {f"s{r}": np.where(rng.random(n) < rng.uniform(0.55, 0.99), labels, 1 - labels) for r in range(n_runs)}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            macro = seedscope.analyze(_runs(list(labels), {k: list(v) for k, v in runs.items()}), n_boot=100).macro
        for metric, row in macro.iterrows():
            low, high = bounds_of(metric, [0.0])
            for a, b in (("ci_low", "ci_high"), ("t_low", "t_high")):
                assert low <= row[a] <= row[b] <= high or np.isnan(row[a]), (trial, metric, a, row[a], row[b])
