"""Macro metrics against hand-computed values and against slow per-run reference code."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from seedscope.metrics.macro import (
    majority_baseline,
    classification_scores,
    class_tallies,
    per_run_scores,
    regression_scores,
    summarize_runs,
)
from seedscope.predictions import align_runs


def slow_scores(pred: list[int], gold: list[int]) -> dict:
    """Per-run metrics written out the long way (scikit-learn's macro semantics)."""
    labels = sorted(set(pred) | set(gold))
    precision, recall, f1 = [], [], []
    for c in labels:
        tp = sum(p == c and g == c for p, g in zip(pred, gold))
        fp = sum(p == c and g != c for p, g in zip(pred, gold))
        fn = sum(p != c and g == c for p, g in zip(pred, gold))
        p_c = tp / (tp + fp) if tp + fp else 0.0
        r_c = tp / (tp + fn) if tp + fn else 0.0
        precision.append(p_c)
        recall.append(r_c)
        f1.append(2 * p_c * r_c / (p_c + r_c) if p_c + r_c else 0.0)
    # MCC as the correlation of one-hot indicator matrices (Gorodkin 2004, covariance form).
    k = max(labels) + 1
    x = np.eye(k)[pred]
    y = np.eye(k)[gold]
    cov = lambda a, b: ((a - a.mean(0)) * (b - b.mean(0))).sum()  # noqa: E731
    denominator = math.sqrt(cov(x, x) * cov(y, y))
    return {
        "accuracy": sum(p == g for p, g in zip(pred, gold)) / len(gold),
        "precision_macro": float(np.mean(precision)),
        "recall_macro": float(np.mean(recall)),
        "f1_macro": float(np.mean(f1)),
        "mcc": cov(x, y) / denominator if denominator else 0.0,
    }


def test_binary_by_hand():
    # gold 1 1 1 1 0 0 ; pred 1 1 0 0 0 1 → TP=2 FN=2 FP=1 TN=1
    scores = classification_scores(class_tallies(np.array([[1, 1, 0, 0, 0, 1]]), np.array([1, 1, 1, 1, 0, 0]), 2)).iloc[0]
    assert scores["accuracy"] == pytest.approx(3 / 6)
    # class 1: P = 2/3, R = 2/4; class 0: P = 1/3, R = 1/2
    assert scores["precision_macro"] == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert scores["recall_macro"] == pytest.approx((2 / 4 + 1 / 2) / 2)
    f1_1 = 2 * (2 / 3) * (1 / 2) / (2 / 3 + 1 / 2)
    f1_0 = 2 * (1 / 3) * (1 / 2) / (1 / 3 + 1 / 2)
    assert scores["f1_macro"] == pytest.approx((f1_1 + f1_0) / 2)
    # binary MCC = (TP·TN − FP·FN) / sqrt((TP+FP)(TP+FN)(TN+FP)(TN+FN))
    assert scores["mcc"] == pytest.approx((2 * 1 - 1 * 2) / math.sqrt(3 * 4 * 2 * 3))


def test_three_class_by_hand():
    gold = np.array([0, 0, 1, 1, 2, 2])
    pred = np.array([[0, 1, 1, 1, 2, 0]])
    scores = classification_scores(class_tallies(pred, gold, 3)).iloc[0]
    assert scores["accuracy"] == pytest.approx(4 / 6)
    # P: c0 1/2, c1 2/3, c2 1/1 ; R: c0 1/2, c1 2/2, c2 1/2
    assert scores["precision_macro"] == pytest.approx((1 / 2 + 2 / 3 + 1) / 3)
    assert scores["recall_macro"] == pytest.approx((1 / 2 + 1 + 1 / 2) / 3)
    f1 = [2 * 0.5 * 0.5 / 1.0, 2 * (2 / 3) * 1 / (2 / 3 + 1), 2 * 1 * 0.5 / 1.5]
    assert scores["f1_macro"] == pytest.approx(np.mean(f1))
    # Gorodkin: c·s − Σ p_k t_k = 4·6 − (2·2 + 3·2 + 1·2) = 12; sqrt((36 − 14)(36 − 12))
    assert scores["mcc"] == pytest.approx(12 / math.sqrt(22 * 24))


def test_zero_division_and_absent_classes_follow_sklearn_semantics():
    # Class 2 exists in the class list but in neither gold nor predictions of this run:
    # it is left out of the macro average. Class 1 is never predicted: precision 0.
    gold = np.array([0, 0, 1, 1])
    pred = np.array([[0, 0, 0, 0]])
    scores = classification_scores(class_tallies(pred, gold, 3)).iloc[0]
    assert scores["precision_macro"] == pytest.approx((0.5 + 0.0) / 2)
    assert scores["recall_macro"] == pytest.approx((1.0 + 0.0) / 2)
    assert scores["f1_macro"] == pytest.approx((2 * 0.5 * 1 / 1.5 + 0.0) / 2)
    assert scores["mcc"] == 0.0  # constant prediction: MCC defined as 0


def test_missing_gold_labels_are_left_out():
    tallies = class_tallies(np.array([[0, 1, 1]]), np.array([0, -1, 1]), 2)
    assert tallies.gold[0].sum() == 2 and tallies.predicted[0].sum() == 2
    assert classification_scores(tallies).iloc[0]["accuracy"] == 1.0


def test_many_free_text_classes_need_no_dense_confusion_array():
    """20,000 distinct answers: a dense S×C×C int64 array would need 32 GB; the tallies are S×C."""
    rng = np.random.default_rng(0)
    n_classes, n_examples = 20_000, 30_000
    gold = rng.integers(0, n_classes, n_examples)
    pred = np.where(rng.random((10, n_examples)) < 0.3, gold, rng.integers(0, n_classes, (10, n_examples)))
    tallies = class_tallies(pred, gold, n_classes)
    assert max(a.shape[1] for a in tallies) == n_classes and all(a.ndim == 2 for a in tallies)
    scores = classification_scores(tallies)
    assert np.allclose(scores["accuracy"], (pred == gold).mean(axis=1))
    slow = slow_scores(pred[0, :300].tolist(), gold[:300].tolist())
    small = classification_scores(class_tallies(pred[:1, :300], gold[:300], n_classes)).iloc[0]
    for name, value in slow.items():
        assert small[name] == pytest.approx(value, abs=1e-12), name


def test_matches_slow_reference_on_random_runs():
    rng = np.random.default_rng(7)
    for n_classes in (2, 3, 5):
        gold = rng.integers(0, n_classes, 60)
        pred = np.where(rng.random((8, 60)) < 0.6, gold, rng.integers(0, n_classes, (8, 60)))
        fast = classification_scores(class_tallies(pred, gold, n_classes))
        for s in range(8):
            slow = slow_scores(pred[s].tolist(), gold.tolist())
            for name, value in slow.items():
                assert fast.iloc[s][name] == pytest.approx(value, abs=1e-12), (n_classes, s, name)


def test_regression_scores_match_scipy():
    rng = np.random.default_rng(3)
    gold = rng.normal(size=40)
    pred = gold + rng.normal(scale=0.5, size=(3, 40))
    scores = regression_scores(pred, gold)
    for s in range(3):
        assert scores.loc[s, "pearson"] == pytest.approx(stats.pearsonr(pred[s], gold)[0])
        assert scores.loc[s, "spearman"] == pytest.approx(stats.spearmanr(pred[s], gold)[0])


def test_regression_constant_run_is_nan_and_missing_gold_left_out():
    gold = np.array([1.0, 2.0, np.nan, 4.0])
    pred = np.array([[1.0, 2.0, 100.0, 4.0], [3.0, 3.0, 3.0, 3.0]])
    scores = regression_scores(pred, gold)
    assert scores.loc[0, "pearson"] == pytest.approx(1.0)
    assert math.isnan(scores.loc[1, "pearson"])


def test_summary_by_hand():
    per_run = pd.DataFrame({"accuracy": [0.6, 0.7, 0.8]})
    row = summarize_runs(per_run, n_boot=2000, seed=1).loc["accuracy"]
    assert row["mean"] == pytest.approx(0.7)
    assert row["var_published"] == pytest.approx(math.sqrt((0.01 + 0 + 0.01) / 3))  # population
    assert row["std_sample"] == pytest.approx(0.1)  # sqrt(0.02 / 2)
    assert row["cv"] == pytest.approx(0.1 / 0.7)
    assert (row["min"], row["max"]) == (pytest.approx(0.6), pytest.approx(0.8))
    assert 0.6 - 1e-12 <= row["ci_low"] < 0.7 < row["ci_high"] <= 0.8 + 1e-12


def test_summary_single_run_and_zero_mean():
    row = summarize_runs(pd.DataFrame({"mcc": [0.5]})).loc["mcc"]
    assert row["var_published"] == 0 and math.isnan(row["std_sample"]) and math.isnan(row["cv"])
    assert summarize_runs(pd.DataFrame({"mcc": [-0.1, 0.1]})).loc["mcc"].isna()["cv"]


def test_per_run_scores_from_a_table():
    table = pd.DataFrame(
        {"run": ["a"] * 3 + ["b"] * 3, "example_id": [1, 2, 3] * 2, "prediction": ["x", "y", "y", "x", "x", "x"], "label": ["x", "y", "x"] * 2}
    )
    scores = per_run_scores(align_runs(table))
    assert list(scores.index) == ["a", "b"]
    assert scores["accuracy"].tolist() == pytest.approx([2 / 3, 2 / 3])
    unlabelled = per_run_scores(align_runs(table.drop(columns="label")))
    assert unlabelled.shape == (2, 0)


def test_majority_baseline_by_hand():
    """What a constant prediction of the most frequent gold label scores: accuracy = its rate, MCC 0."""
    table = pd.DataFrame({"run": "a", "example_id": [str(i) for i in range(5)], "prediction": [0, 1, 2, 0, 1],
                          "label": [1, 1, 1, 0, 2]})
    baseline = majority_baseline(align_runs(table))
    assert baseline["accuracy"] == pytest.approx(0.6) and baseline["mcc"] == 0.0
    # predicting class 1 always: precision 0.6 for class 1, 0 for the others; recall 1, 0, 0
    assert baseline["precision_macro"] == pytest.approx(0.2) and baseline["recall_macro"] == pytest.approx(1 / 3)
    assert baseline["f1_macro"] == pytest.approx((2 * 0.6 * 1 / 1.6) / 3)
    regression = align_runs(table.assign(prediction=[0.5, 1.5, 2.0, 0.1, 3.3], label=[1.0, 2, 3, 0, 2]))
    assert majority_baseline(regression).to_dict() == {"pearson": 0.0, "spearman": 0.0}
    assert majority_baseline(align_runs(table.drop(columns="label"))).empty


@pytest.mark.parametrize("n_classes", [3, 40])  # byte comparisons per class; one bincount per block
def test_tallies_a_block_of_runs_at_a_time_are_those_of_one_run_at_a_time(monkeypatch, n_classes):
    from seedscope.metrics import micro
    from seedscope.metrics.macro import class_tallies

    rng = np.random.default_rng(n_classes)
    predictions = rng.integers(0, n_classes, (23, 31)).astype(np.int8)
    labels = rng.integers(-1, n_classes, 31)
    kept = labels >= 0
    slow = [(np.bincount(row[kept][row[kept] == labels[kept]], minlength=n_classes),
             np.bincount(row[kept], minlength=n_classes)) for row in predictions]
    for block in (1 << 22, 40, 1):  # all runs in one block; a few; one run a block
        monkeypatch.setattr(micro, "BLOCK_VALUES", block)
        tallies = class_tallies(predictions, labels, n_classes)
        assert np.array_equal(tallies.tp, [tp for tp, _ in slow])
        assert np.array_equal(tallies.predicted, [predicted for _, predicted in slow])
