"""The examples that flip from seed to seed, with their text, gold label and every run's answer.

The ranking and the categories (robust, consistently wrong, unstable …) are the analysis's
(:meth:`seedscope.analysis.seed_effects.Analysis.most_unstable`, ``Analysis.stability``); this module only
joins what a reader needs to look at an example: its text (from the prediction table's
``text`` column, or the task texts the caller read with :func:`seedscope.io.results.texts.task_texts`)
and the prediction of each run, one ``pred_<run>`` column per run (beyond
:data:`~seedscope.metrics.pairs.EXACT_PAIR_RUNS` runs, one column counting each answer instead).
"""

from __future__ import annotations

from typing import Mapping

import numpy as np
import pandas as pd

from seedscope.analysis.seed_effects import Analysis
from seedscope.metrics.pairs import EXACT_PAIR_RUNS
from seedscope.metrics.stability import CATEGORIES
from seedscope.predictions import TEXT

PRED_PREFIX = "pred_"
#: the column that counts each answer, in place of one column per run, beyond EXACT_PAIR_RUNS runs
ANSWERS = "answers (runs)"
ALWAYS_COUNTED = ("robust", "consistently_wrong")
TEXTS = (TEXT, "text_pair")
#: stability columns shown beside each example, in this order, when the analysis has them
STABILITY_COLUMNS = (
    "agreement", "correct_rate", "category", "label", "majority_prediction",
    "prediction_mean", "prediction_std", "prediction_range", "abs_error_mean",
)


def unstable_examples(analysis: Analysis, k: int = 20, texts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ``k`` least stable examples: stability columns, text (when known), one column per run.

    ``texts`` (index = example_id, columns ``text`` / ``text_pair``) fills the text when the
    prediction table carried none; ids it lacks get an empty text.
    """
    top = analysis.most_unstable(k)
    frame = top[[c for c in STABILITY_COLUMNS if c in top.columns]].copy()
    if TEXT in top.columns:
        frame[TEXT] = top[TEXT]
    elif texts is not None:
        joined = texts.reindex(top.index.astype(str))
        for column in TEXTS:
            if column in joined.columns and joined[column].notna().any():
                frame[column] = joined[column].to_numpy()
    aligned = analysis.aligned
    position = pd.Index(aligned.example_ids).get_indexer(top.index)
    answers = aligned.predictions[:, position]
    if aligned.n_runs > EXACT_PAIR_RUNS:  # thousands of runs: how many gave each answer, not a column per run
        if aligned.task_type == "classification":
            frame[ANSWERS] = [_answer_counts(column, aligned.classes) for column in answers.T]
        return frame
    if aligned.task_type == "classification":
        answers = np.asarray(aligned.classes, dtype=object)[answers]
    runs = pd.DataFrame(answers.T, index=frame.index, columns=[f"{PRED_PREFIX}{run}" for run in aligned.runs])
    return pd.concat([frame, runs], axis=1)  # every run's column at once (one by one costs seconds at 1,000 runs)


def _answer_counts(codes: np.ndarray, classes) -> str:
    """``"entailment 5,123, not_entailment 4,877"``: each answer the runs gave to one example, most frequent first."""
    counts = np.bincount(codes, minlength=len(classes))
    order = np.argsort(-counts, kind="stable")
    return ", ".join(f"{classes[c]} {counts[c]:,}" for c in order if counts[c])


def stability_counts(analyses: Mapping[str, Analysis]) -> pd.DataFrame:
    """Examples per stability category (columns) for each classification task (rows), with the total.

    Robust and consistently-wrong are always counted for labelled classification, zero included.
    """
    analyses = {name: a for name, a in analyses.items() if a.task_type == "classification"}
    if not analyses:
        return pd.DataFrame(index=pd.Index([], name="task"))
    counts = pd.DataFrame({name: a.category_counts() for name, a in analyses.items()}).T
    labelled = any(a.aligned.has_labels for a in analyses.values())
    shown = [c for c in CATEGORIES if c in counts.columns or (labelled and c in ALWAYS_COUNTED)]
    counts = counts.reindex(columns=shown).fillna(0).astype("int64")
    counts["total"] = [a.aligned.n_examples for a in analyses.values()]
    counts.index.name = "task"
    return counts


def unstable_csv(frames: Mapping[str, pd.DataFrame]) -> str:
    """One CSV of every task's unstable examples: a ``task`` column first, runs side by side."""
    parts = [frame.reset_index().assign(task=name) for name, frame in frames.items()]
    if not parts:
        return ""
    table = pd.concat(parts, ignore_index=True)
    table = table[["task"] + [c for c in table.columns if c != "task"]]
    return table.to_csv(index=False)
