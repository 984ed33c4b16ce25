"""What a runner hands back: the run's predictions and what is needed to trust them.

Every runner builds its prediction table (:func:`prediction_table`) and its metrics
(:func:`run_metrics`) here, and reports progress through one kind of hook (:data:`StepHook`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from seedscope.metrics.macro import per_run_scores
from seedscope.predictions import (
    EXAMPLE_ID,
    LABEL,
    PREDICTION,
    PROB_PREFIX,
    RUN,
    align_runs,
)
from seedscope.tasks import TaskSpec

#: progress hook: called with (steps done, total steps) after every optimiser step or batch
StepHook = Callable[[int, int], None]


@dataclass
class RunResult:
    """One finished run.

    ``predictions`` is a prediction table (``seedscope.predictions``: run, example_id,
    prediction, label, prob_<class>; label names for classification, floats for
    regression); ``metrics`` hold fractions in [0, 1] (correlations in [−1, 1]) and losses;
    ``timings`` seconds and examples per second; ``environment`` libraries, device,
    determinism flags and the seed of every factor. A prompted run also keeps what it scored:
    ``prompt_prefix`` (the text shared by every example, stored once) and, in its predictions,
    each example's ``query`` and ``continuations`` (see :mod:`seedscope.store.views`). A run that
    draws several answers per prompt keeps them all in ``samples``, a sample table
    (:mod:`seedscope.samples`: one row per example and sample).
    """

    run_id: str
    predictions: pd.DataFrame
    metrics: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    environment: dict = field(default_factory=dict)
    prompt_prefix: str | None = None
    samples: pd.DataFrame | None = None


def prediction_table(run_id: str, frame: pd.DataFrame, logits: np.ndarray, task: TaskSpec) -> pd.DataFrame:
    """Predictions in the prediction-table format: label names and one probability per class."""
    logits = np.asarray(logits, dtype=np.float64)
    base = {RUN: run_id, EXAMPLE_ID: frame["example_id"].astype(str).to_numpy()}
    if task.task_type == "regression":
        return pd.DataFrame({**base, PREDICTION: logits.reshape(len(frame)), LABEL: frame["label"].astype(float).to_numpy()})
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = shifted / shifted.sum(axis=1, keepdims=True)
    names = np.array(task.label_names, dtype=object)
    columns = {
        **base,
        PREDICTION: names[probabilities.argmax(axis=1)],
        LABEL: names[frame["label"].astype(int).to_numpy()],
    }
    columns.update({f"{PROB_PREFIX}{name}": probabilities[:, j] for j, name in enumerate(task.label_names)})
    return pd.DataFrame(columns)


def run_metrics(table: pd.DataFrame, task: TaskSpec) -> dict:
    """The run's macro metrics (``seedscope.metrics``): fractions, correlations for regression."""
    task_type = "regression" if task.task_type == "regression" else "classification"
    scores = per_run_scores(align_runs(table, task_type=task_type, source=f"run {table[RUN].iloc[0]}"))
    return {name: float(value) for name, value in scores.iloc[0].items()}
