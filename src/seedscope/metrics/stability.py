"""Per-example stability: which examples flip from seed to seed.

For classification, with n_{t,c} the number of runs predicting class c for example t:

- ``agreement`` = Σ_c n_{t,c}(n_{t,c}−1) / (S(S−1)): the share of run pairs that agree on t
  (its mean over examples is the mean CON);
- ``correct_rate`` = n_{t,r_t} / S: the share of runs that get t right;
- ``category``: ``robust`` (every run correct), ``consistently_wrong`` (every run gives the
  same wrong answer), ``unstable`` (some runs right, some wrong), ``wrong_varying`` (never
  right, but the wrong answers differ). Without gold labels: ``stable`` / ``unstable``.

For regression: the spread (population std and range) of the S predicted values and the mean
absolute error.
"""

from __future__ import annotations

import re
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np
import pandas as pd

from seedscope.metrics.micro import ExampleAgreement, correct_counts, example_agreement, require_pairs
from seedscope.predictions import AlignedRuns

CATEGORIES = ("robust", "consistently_wrong", "unstable", "wrong_varying", "stable")
#: runs × examples from which :func:`examples_ahead` makes the table on a second core
PARALLEL_CELLS = 4_000_000


def examples_ahead(aligned: AlignedRuns) -> Future:
    """(each example's agreement, None for regression; the stability table): from :data:`PARALLEL_CELLS` runs ×
    examples in a thread, while the caller makes the run-level figures (numpy lets go of the interpreter's lock in
    its loops, so the two share the cores), below that at once."""

    def make():
        classes = aligned.task_type == "classification"  # each example's classes counted once, for CON and stability
        agreement = example_agreement(aligned.predictions, aligned.n_classes) if classes else None
        return agreement, example_stability(aligned, agreement)

    if aligned.predictions.size < PARALLEL_CELLS:
        done = Future()
        done.set_result(make())
        return done
    pool = ThreadPoolExecutor(1, thread_name_prefix="seedscope-examples")
    try:
        return pool.submit(make)
    finally:
        pool.shutdown(wait=False)  # its thread ends once the table is made


def example_stability(aligned: AlignedRuns, agreement: ExampleAgreement | None = None) -> pd.DataFrame:
    """One row per example (index = example_id) describing how stable its prediction is (classification: from
    ``agreement`` when the caller has counted it for the mean CON already)."""
    require_pairs(aligned.n_runs)
    if aligned.task_type == "regression":
        return _regression_stability(aligned)
    n_runs = aligned.n_runs
    agreement = agreement if agreement is not None else example_agreement(aligned.predictions, aligned.n_classes)
    classes = np.asarray(aligned.classes, dtype=object)
    n_distinct = agreement.n_distinct
    index = _index(aligned)
    frame = pd.DataFrame(
        {
            "agreement": agreement.pair_counts / (n_runs * (n_runs - 1)),
            "majority_prediction": _objects(classes[agreement.majority], index),
            "majority_share": agreement.majority_count / n_runs,
            "n_distinct": n_distinct,
        },
        index=index,
    )  # the other columns added one by one: built at once, all of them would be copied together (a third more memory)
    robust, consistently_wrong, unstable, wrong_varying, stable = range(len(CATEGORIES))
    one_class = n_distinct == 1
    if aligned.has_labels:
        labelled = aligned.labels >= 0
        every = bool(labelled.all())  # the common case: no mask to apply
        correct = correct_counts(aligned.predictions, aligned.labels)
        correct = correct if every else np.where(labelled, correct, 0)
        labels = classes[aligned.labels] if every else np.where(labelled, classes[np.maximum(aligned.labels, 0)], None)
        frame["label"] = _objects(labels, index)
        frame["correct_rate"] = correct / n_runs if every else np.where(labelled, correct / n_runs, np.nan)
        # the first that holds, as np.select takes them: all right, one (wrong) class, some right, else wrong_varying
        category = np.full(len(correct), wrong_varying, dtype=np.int8)
        category[correct > 0] = unstable
        category[one_class] = consistently_wrong
        category[correct == n_runs] = robust
        if not every:
            category = np.where(labelled, category, np.where(one_class, stable, unstable).astype(np.int8))
    else:
        frame["correct_rate"] = np.nan
        category = np.where(one_class, stable, unstable)
    # chosen as small codes, named once: a million names picked by code, not by comparing strings
    frame["category"] = _objects(np.asarray(CATEGORIES, dtype=object)[category], index)
    return frame


def _index(aligned: AlignedRuns) -> pd.Index:
    """The example ids as the index, int64 or Python strings as they are (not copied into Arrow strings)."""
    return pd.Index(aligned.example_ids, dtype=aligned.example_ids.dtype, name="example_id")


def _objects(values: np.ndarray, index: pd.Index) -> pd.Series:
    """Labels and names as a column of Python objects: pandas 3 would copy 10⁶ strings into Arrow, 0.2 s each."""
    return pd.Series(values, index=index, dtype=object, copy=False)


def _regression_stability(aligned: AlignedRuns) -> pd.DataFrame:
    predictions = aligned.predictions
    frame = pd.DataFrame(
        {
            "prediction_mean": predictions.mean(axis=0),
            "prediction_std": predictions.std(axis=0),
            "prediction_range": predictions.max(axis=0) - predictions.min(axis=0),
        },
        index=_index(aligned),
    )
    if aligned.has_labels:
        frame["label"] = aligned.labels
        frame["abs_error_mean"] = np.abs(predictions - aligned.labels).mean(axis=0)
    return frame


def natural_order(ids: np.ndarray) -> np.ndarray:
    """Positions that put example ids in the order a reader expects: numbers by value (2 before 11), text by its runs
    of digits read as numbers (``q2`` before ``q11``). Lists shown to a reader break their ties so; every computation
    keeps :func:`~seedscope.predictions.text_order`."""
    ids = np.asarray(ids)
    if ids.dtype.kind in "iu":
        return np.argsort(ids, kind="stable")
    text = [str(value) for value in ids]
    if all(re.fullmatch(r"-?\d+", value) for value in text):  # whole numbers written as text: as the numbers sort
        return np.argsort(np.array([int(value) for value in text], dtype=object), kind="stable")
    keys = [tuple(int(part) if index % 2 else part for index, part in enumerate(re.split(r"(\d+)", value)))
            for value in text]
    return np.array(sorted(range(len(keys)), key=keys.__getitem__), dtype=np.int64)


def most_unstable(stability: pd.DataFrame, k: int = 10) -> pd.DataFrame:
    """The ``k`` least stable examples: lowest agreement (classification) or widest spread.

    Ties are broken by a correct rate closest to ½ (most contested), then by the example id's natural order
    (:func:`natural_order`: 2 before 11), so the list reads as a reader sorts it.
    """
    if "agreement" in stability.columns:
        keys = [(stability["correct_rate"] - 0.5).abs().fillna(0).to_numpy(), stability["agreement"].to_numpy()]
    else:
        keys = [-stability["prediction_std"].to_numpy()]
    return stability.iloc[_first(keys, k, stability.index.to_numpy())]


def _first(keys: list[np.ndarray], k: int, ids: np.ndarray) -> np.ndarray:
    """Positions of the ``k`` first rows in ``np.lexsort(keys)`` order (last key first, ties by the ids' natural order).

    Only the rows whose primary key is at most the k-th smallest can be among them, so those few
    are sorted instead of all 10⁶ (the same rows in the same order as sorting everything).
    """
    primary = keys[-1]
    rows = np.arange(len(primary))
    if 0 < k < len(primary):
        threshold = np.partition(primary, k - 1)[k - 1]
        if not np.isnan(threshold):
            rows = np.flatnonzero(primary <= threshold)
    rank = np.empty(len(rows), dtype=np.int64)
    rank[natural_order(ids[rows])] = np.arange(len(rows))
    return rows[np.lexsort([rank, *(key[rows] for key in keys)])][:k]  # numeric keys only
