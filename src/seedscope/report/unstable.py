"""The examples that flip from seed to seed, with their text, gold label and every run's answer.

The ranking and the categories (robust, consistently wrong, unstable …) are the analysis's
(:meth:`seedscope.api.Analysis.most_unstable`, ``Analysis.stability``); this module only
joins what a reader needs to look at an example: its text (from the prediction table's
``text`` column, or from the task's local data through :func:`seedscope.tasks.load_examples`)
and the prediction of each run, one ``pred_<run>`` column per run.
"""

from __future__ import annotations

import os
from typing import Mapping

import numpy as np
import pandas as pd

from seedscope.api import TEXT_COLUMN, Analysis
from seedscope.errors import SeedscopeError
from seedscope.metrics.stability import CATEGORIES
from seedscope.tasks import DATA_DIR_ENV, get_task, load_examples

PRED_PREFIX = "pred_"
ALWAYS_COUNTED = ("robust", "consistently_wrong")
TEXT_COLUMNS = (TEXT_COLUMN, "text_pair")
#: stability columns shown beside each example, in this order, when the analysis has them
STABILITY_COLUMNS = (
    "agreement", "correct_rate", "category", "label", "majority_prediction",
    "prediction_mean", "prediction_std", "prediction_range", "abs_error_mean",
)


def task_texts(task: str | None, data_dir: str | os.PathLike | None = None) -> pd.DataFrame | None:
    """``text`` / ``text_pair`` of a registered task's validation examples (index = example_id).

    Read only from local data (``data_dir`` or ``$SEEDSCOPE_DATA_DIR``), never the hub: a
    report does not download data. None when the task is unknown or its data is not there.
    """
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV)
    if task is None or not data_dir:
        return None
    try:
        examples = load_examples(get_task(task), split="validation", data_dir=data_dir)
    except SeedscopeError:
        return None
    return examples.set_index("example_id")[list(TEXT_COLUMNS)]


def unstable_examples(analysis: Analysis, k: int = 20, texts: pd.DataFrame | None = None) -> pd.DataFrame:
    """The ``k`` least stable examples: stability columns, text (when known), one column per run.

    ``texts`` (index = example_id, columns ``text`` / ``text_pair``) fills the text when the
    prediction table carried none; ids it lacks get an empty text.
    """
    top = analysis.most_unstable(k)
    frame = top[[c for c in STABILITY_COLUMNS if c in top.columns]].copy()
    if TEXT_COLUMN in top.columns:
        frame[TEXT_COLUMN] = top[TEXT_COLUMN]
    elif texts is not None:
        joined = texts.reindex(top.index.astype(str))
        for column in TEXT_COLUMNS:
            if column in joined.columns and joined[column].notna().any():
                frame[column] = joined[column].to_numpy()
    aligned = analysis.aligned
    position = pd.Index(aligned.example_ids).get_indexer(top.index)
    answers = aligned.predictions[:, position]
    if aligned.task_type == "classification":
        answers = np.asarray(aligned.classes, dtype=object)[answers]
    for run, row in zip(aligned.runs, answers):
        frame[f"{PRED_PREFIX}{run}"] = row
    return frame


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
