"""Macro seed effects: each run's metric values, and their spread across runs.

Per run (vectorised over runs): accuracy, macro precision / recall / F1 and Matthews
correlation for classification, from per-class tallies (true positives, gold and predicted
counts) built with ``bincount`` — never a C × C confusion matrix; Pearson and Spearman for regression (scipy). Across runs: mean, VAR exactly
as published (the population standard deviation, divisor S), the sample standard
deviation (divisor S−1), CV = sample std / |mean|, min, max and a bootstrap CI of the mean.

Macro averages follow scikit-learn's ``average="macro"`` semantics with ``zero_division=0``:
the average runs over the classes that occur in that run's gold labels or predictions, and a
class with no predictions (or no gold examples) scores 0 precision (recall).
"""

from __future__ import annotations

import re

import warnings
from typing import NamedTuple

import numpy as np
import pandas as pd

from seedscope.metrics.micro import DENSE_CLASSES, run_blocks
from seedscope.metrics.resampling import bootstrap_mean_ci, clipped, interval
from seedscope.predictions import AlignedRuns

#: the per-run metrics of classification predictions, and of regression ones
CLASSIFICATION_METRICS = ("accuracy", "precision_macro", "recall_macro", "f1_macro", "mcc")
REGRESSION_METRICS = ("pearson", "spearman")
#: the range of each metric with one (the names seedscope computes, and the usual score-table names of proportions)
METRIC_BOUNDS = {**dict.fromkeys(("accuracy", "precision_macro", "recall_macro", "f1_macro", "acc", "acc_norm",
                                  "exact_match", "em", "f1", "pass@1"), (0.0, 1.0)),
                 **dict.fromkeys(("mcc", "pearson", "spearman"), (-1.0, 1.0))}


#: the names of the sampling estimators (:mod:`seedscope.metrics.sampled`), each a share of items in [0, 1]
ESTIMATOR = re.compile(r"(pass@|pass\^|maj@|G-Pass@|mG-Pass@)\d+(_[0-9.]+)?|avg@n")


def bounds_of(metric, values) -> tuple[float, float] | None:
    """The range of ``metric`` when it has one and every value lies in it (a score table of percentages does not:
    its ``acc`` of 75.3 has no range seedscope knows); None otherwise."""
    bounds = METRIC_BOUNDS.get(str(metric))
    if bounds is None and ESTIMATOR.fullmatch(str(metric)):  # pass@k, pass^k, maj@k, (m)G-Pass@k_τ, avg@n: shares
        bounds = (0.0, 1.0)
    if bounds is None:
        return None
    array = np.asarray(values, dtype=float)
    array = array[np.isfinite(array)]
    return bounds if ((array >= bounds[0]) & (array <= bounds[1])).all() else None
SUMMARY_COLUMNS = ("mean", "var_published", "std_sample", "cv", "min", "max", "ci_low", "ci_high", "t_low", "t_high",
                   "t_clipped")
#: metrics whose chance level is 1/K (K classes); correlations and MCC have chance level 0
PER_CLASS_CHANCE = ("accuracy", "f1_macro", "precision_macro", "recall_macro")


def chance_level(metric: str, num_classes: int | None) -> float | None:
    """Score of a chance-level run: 1/K for accuracy and macro averages, 0 for MCC and correlations."""
    if metric in PER_CLASS_CHANCE:
        return 1 / num_classes if num_classes else None
    return 0.0 if metric in ("mcc", "pearson", "spearman") else None


class ClassTallies(NamedTuple):
    """Per run and class (each S × C): true positives, gold examples, predicted examples.

    Every macro metric and MCC needs only these marginals, so no S × C × C confusion array is
    built: free-text answers with tens of thousands of distinct classes stay O(S·C).
    """

    tp: np.ndarray
    gold: np.ndarray
    predicted: np.ndarray


def class_tallies(predictions: np.ndarray, labels: np.ndarray, n_classes: int) -> ClassTallies:
    """Tallies of S runs against one gold row; examples whose gold label is missing (−1) are left out.

    A block of runs at a time (:func:`~seedscope.metrics.micro.run_blocks`), on the stored
    (small-integer) codes: 10,000 runs of 50 examples are one block, and 100 runs × 10⁶ examples
    stay within a few MB beyond the memory of their int8 codes.
    """
    keep = labels >= 0
    gold = labels[keep]
    n_runs = predictions.shape[0]
    tp = np.zeros((n_runs, n_classes), dtype=np.int64)
    predicted = np.zeros((n_runs, n_classes), dtype=np.int64)
    dense = n_classes <= DENSE_CLASSES
    gold_masks = [gold == c for c in range(n_classes)] if dense else None
    for block in run_blocks(n_runs, len(gold)):
        rows = predictions[block] if keep.all() else np.compress(keep, predictions[block], axis=1)
        if dense:  # a few byte comparisons per class beat a bincount's cast to 64-bit
            for c, is_gold in enumerate(gold_masks):
                hit = rows == c
                predicted[block, c] = np.count_nonzero(hit, axis=1)
                tp[block, c] = np.count_nonzero(hit & is_gold, axis=1)
        else:  # one bincount per block: each run's codes offset by its row
            codes = rows + (np.arange(len(rows)) * n_classes)[:, None]
            size = len(rows) * n_classes
            predicted[block] = np.bincount(codes.ravel(), minlength=size).reshape(-1, n_classes)
            tp[block] = np.bincount(codes[rows == gold], minlength=size).reshape(-1, n_classes)
    gold_counts = np.broadcast_to(np.bincount(gold, minlength=n_classes), (n_runs, n_classes))
    return ClassTallies(tp, gold_counts, predicted)


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (scikit-learn's zero_division=0)."""
    numerator = np.asarray(numerator, dtype=float)
    denominator = np.asarray(denominator, dtype=float)
    out = np.zeros(np.broadcast(numerator, denominator).shape)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out


def classification_scores(tallies: ClassTallies) -> pd.DataFrame:
    """Accuracy, macro P/R/F1 and MCC of each run from its class tallies."""
    tp, gold, predicted = (np.asarray(a, dtype=float) for a in tallies)
    total = gold.sum(axis=1)
    present = (gold + predicted) > 0
    n_present = present.sum(axis=1)

    def macro(per_class: np.ndarray) -> np.ndarray:
        return _divide((per_class * present).sum(axis=1), n_present)

    correct = tp.sum(axis=1)
    # Gorodkin's multi-class MCC; 0 when either marginal is constant (as scikit-learn does).
    covariance = correct * total - (predicted * gold).sum(axis=1)
    spread = np.sqrt((total**2 - (predicted**2).sum(axis=1)) * (total**2 - (gold**2).sum(axis=1)))
    return pd.DataFrame(
        {
            "accuracy": _divide(correct, total),
            "precision_macro": macro(_divide(tp, predicted)),
            "recall_macro": macro(_divide(tp, gold)),
            "f1_macro": macro(_divide(2 * tp, predicted + gold)),  # 2TP / (2TP + FP + FN)
            "mcc": _divide(covariance, spread),
        }
    )


def regression_scores(predictions: np.ndarray, labels: np.ndarray) -> pd.DataFrame:
    """Pearson and Spearman correlation of each run's predictions with the gold values.

    Examples without a gold value (NaN) are left out; a run with constant predictions has an
    undefined correlation and gets NaN.
    """
    keep = ~np.isnan(labels)
    pred, gold = predictions[:, keep], labels[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input: scipy warns and returns NaN
        from scipy import stats  # only regression needs it (scipy.stats alone takes most of a second to import)

        # run by run: scipy's correlations of all runs at once differ from these in the last bit
        pearson = [stats.pearsonr(row, gold).statistic for row in pred]
        spearman = [stats.spearmanr(row, gold).statistic for row in pred]
    return pd.DataFrame({"pearson": np.asarray(pearson, float), "spearman": np.asarray(spearman, float)})


#: the one macro metric of per-example values without labels: the run's mean value
MEAN_SCORE = "mean"


def per_run_scores(aligned: AlignedRuns) -> pd.DataFrame:
    """One row per run (index = run name) with every macro metric of the task type.

    Without gold labels: per-example values (``regression``: a score per example, such as an
    inspect_ai numeric scorer's) give their ``mean``; classes give no column.
    """
    if not aligned.has_labels and aligned.task_type == "regression":
        scores = pd.DataFrame({MEAN_SCORE: aligned.predictions.mean(axis=1)})
    elif not aligned.has_labels:
        scores = pd.DataFrame(index=range(aligned.n_runs))
    elif aligned.task_type == "regression":
        scores = regression_scores(aligned.predictions, aligned.labels)
    else:
        scores = classification_scores(class_tallies(aligned.predictions, aligned.labels, aligned.n_classes))
    scores.index = pd.Index(aligned.runs, name="run")
    return scores


def majority_baseline(aligned: AlignedRuns) -> pd.Series:
    """Every metric of a run that always predicts the most frequent gold label: what a run must beat.

    Accuracy is then the majority-class rate, MCC 0; for regression a constant prediction has
    no correlation, so Pearson and Spearman are 0. Empty without gold labels.
    """
    if not aligned.has_labels:
        return pd.Series(dtype=float, name="baseline")
    if aligned.task_type == "regression":
        return pd.Series(0.0, index=list(REGRESSION_METRICS), name="baseline")
    known = aligned.labels[aligned.labels >= 0]
    constant = np.full((1, aligned.n_examples), np.bincount(known, minlength=aligned.n_classes).argmax())
    scores = classification_scores(class_tallies(constant, aligned.labels, aligned.n_classes))
    return scores.iloc[0].rename("baseline")


def summarize_runs(
    per_run: pd.DataFrame, *, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> pd.DataFrame:
    """Spread of each metric across runs: index = metric, columns = :data:`SUMMARY_COLUMNS`.

    ``var_published`` is the paper's VAR (population std, divisor S); ``std_sample`` divides
    by S−1 (NaN for a single run); ``cv`` = std_sample / |mean| (NaN when the mean is 0);
    ``ci_*`` the percentile bootstrap CI of the mean, ``t_*`` the Student-t interval beside it
    (with few seeds the bootstrap interval is too narrow: it cannot reach beyond the observed runs).
    A t interval that runs past its metric's range (:func:`bounds_of`: accuracy above 1 from two
    seeds) is clipped to it, and ``t_clipped`` says so.
    """
    if per_run.shape[1] == 0:
        return pd.DataFrame(columns=list(SUMMARY_COLUMNS), index=pd.Index([], name="metric"), dtype=float)
    values = per_run.to_numpy(dtype=float)
    n_runs = values.shape[0]
    mean = values.mean(axis=0)
    std_sample = values.std(axis=0, ddof=1) if n_runs > 1 else np.full(values.shape[1], np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(mean != 0, std_sample / np.abs(mean), np.nan)
    low, high = bootstrap_mean_ci(values, n_boot=n_boot, confidence=confidence, seed=seed)
    with np.errstate(invalid="ignore"):
        t_low, t_high = interval(None, values, method="t", confidence=confidence)
    t_clipped = np.zeros(values.shape[1], dtype=bool)
    for i, metric in enumerate(per_run.columns):
        t_low[i], t_high[i], t_clipped[i] = clipped(t_low[i], t_high[i], bounds_of(metric, values[:, i]),
                                                    f"the t interval of {metric} over {n_runs} runs")
    summary = pd.DataFrame(
        {
            "mean": mean,
            "var_published": values.std(axis=0, ddof=0),
            "std_sample": std_sample,
            "cv": cv,
            "min": values.min(axis=0),
            "max": values.max(axis=0),
            "ci_low": low,
            "ci_high": high,
            "t_low": t_low,
            "t_high": t_high,
            "t_clipped": t_clipped,
        },
        index=pd.Index(per_run.columns, name="metric"),
    )
    return summary
