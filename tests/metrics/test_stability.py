"""Per-example stability: agreement, correct rate, categories, most unstable."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from seedscope.metrics.stability import example_stability, most_unstable
from seedscope.predictions import align_runs


def table(predictions: dict[str, list], labels: list | None) -> pd.DataFrame:
    rows = []
    for run, values in predictions.items():
        for i, value in enumerate(values):
            row = {"run": run, "example_id": f"e{i}", "prediction": value}
            if labels is not None:
                row["label"] = labels[i]
            rows.append(row)
    return pd.DataFrame(rows)


RUNS = {  # e0 robust, e1 consistently wrong, e2 unstable, e3 wrong but varying
    "s1": ["a", "b", "a", "b"],
    "s2": ["a", "b", "c", "c"],
    "s3": ["a", "b", "a", "b"],
}
GOLD = ["a", "a", "a", "a"]


def test_categories_and_rates_by_hand():
    stability = example_stability(align_runs(table(RUNS, GOLD)))
    assert stability["category"].tolist() == ["robust", "consistently_wrong", "unstable", "wrong_varying"]
    assert stability["correct_rate"].tolist() == pytest.approx([1, 0, 2 / 3, 0])
    # agreement = Σ_c n(n−1) / (S(S−1)): e2 has counts a:2, c:1 → 2/6
    assert stability["agreement"].tolist() == pytest.approx([1, 1, 2 / 6, 2 / 6])
    assert stability.loc["e2", "majority_prediction"] == "a"
    assert stability["n_distinct"].tolist() == [1, 1, 2, 2]


def test_mean_agreement_is_mean_con():
    rng = np.random.default_rng(4)
    pred = rng.integers(0, 3, (5, 40))
    frame = pd.DataFrame(
        [{"run": s, "example_id": t, "prediction": int(pred[s, t])} for s in range(5) for t in range(40)]
    )
    stability = example_stability(align_runs(frame))
    pairs = [np.mean(pred[a] == pred[b]) for a, b in itertools.combinations(range(5), 2)]
    assert stability["agreement"].mean() == pytest.approx(np.mean(pairs))


def test_without_labels_only_stable_or_unstable():
    stability = example_stability(align_runs(table(RUNS, None)))
    assert stability["category"].tolist() == ["stable", "stable", "unstable", "unstable"]
    assert stability["correct_rate"].isna().all()


def test_most_unstable_orders_by_agreement_then_contest():
    stability = example_stability(align_runs(table(RUNS, GOLD)))
    # e2 and e3 tie on agreement; e2 (correct rate 2/3) is closer to ½ than e3 (0)
    assert most_unstable(stability, 2).index.tolist() == ["e2", "e3"]
    assert len(most_unstable(stability, 10)) == 4


def test_regression_stability():
    frame = table({"s1": [1.0, 2.5], "s2": [1.0, 3.5]}, [1.0, 3.0])
    stability = example_stability(align_runs(frame, task_type="regression"))
    assert stability["prediction_std"].tolist() == pytest.approx([0.0, 0.5])
    assert stability["abs_error_mean"].tolist() == pytest.approx([0.0, 0.5])
    assert most_unstable(stability, 1).index.tolist() == ["e1"]


def test_the_first_rows_are_those_of_a_full_stable_sort():
    """most_unstable sorts only the candidates for its k rows; the rows and their order are a full sort's, ties by
    the ids' natural order (2 before 11), the same for int ids and for the same ids as text."""
    from seedscope.metrics.stability import _first

    rng = np.random.default_rng(1)
    for trial in range(300):
        n, k = int(rng.integers(1, 60)), int(rng.integers(0, 70))
        primary, secondary = rng.integers(0, 4, n) / 4.0, rng.integers(0, 3, n) / 2.0
        if trial % 3 == 0:
            primary[rng.random(n) < 0.3] = np.nan
        keys = [secondary, primary] if trial % 2 else [primary]
        ids = rng.permutation(n) * int(rng.integers(1, 30)) - (n if trial % 4 == 0 else 0)
        text = [str(i) for i in ids]
        place = np.argsort(np.argsort(ids, kind="stable"))  # each id's place among the ids sorted as numbers
        expected = np.lexsort([place, *keys])[:k]
        np.testing.assert_array_equal(_first(keys, k, ids.astype(np.int64)), expected)
        np.testing.assert_array_equal(_first(keys, k, np.array(text, dtype=object)), expected)


def test_ties_are_listed_in_natural_order():
    """Among equally unstable examples, 2 comes before 11 and q2 before q11 (not 1, 11, 111, 12 …)."""
    from seedscope.metrics.stability import _first, natural_order

    ids = np.array([111, 12, 2, 11, 1], dtype=np.int64)
    assert ids[_first([np.zeros(5)], 5, ids)].tolist() == [1, 2, 11, 12, 111]
    text = np.array(["q11", "q2", "q1", "p10", "p9"], dtype=object)
    assert text[natural_order(text)].tolist() == ["p9", "p10", "q1", "q2", "q11"]
    assert np.array(["10", "-3", "9"], dtype=object)[natural_order(np.array(["10", "-3", "9"], dtype=object))].tolist() \
        == ["-3", "9", "10"]
