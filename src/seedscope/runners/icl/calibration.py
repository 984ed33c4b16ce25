"""Contextual calibration of a prompted model (Zhao et al. 2021, "Calibrate Before Use").

A prompt biases a model towards some label words (the majority label of its demonstrations,
the last one shown, a word that is simply common), and which bias depends on the demonstrations
and their order: one source of the seed spread of in-context learning. Contextual calibration
asks the same prompt about content-free inputs (``N/A``, ``[MASK]`` and the empty string, every
text field of the example set to it), averages the class probabilities they get into ``p_cf``,
and rescales every prediction by it: ``q ∝ p / p_cf`` — the paper's ``W p`` with
``W = diag(p_cf)⁻¹``, renormalised to a distribution (the argmax is the paper's).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: the paper's content-free inputs, whose probabilities are averaged
CONTENT_FREE = ("N/A", "[MASK]", "")


def content_free_rows(tests: pd.DataFrame) -> pd.DataFrame:
    """One row per content-free input, shaped like the test rows (every text field set to it)."""
    template = tests.iloc[0]
    rows = []
    for text in CONTENT_FREE:
        row = template.copy()
        row["text"] = text
        if "text_pair" in row.index and not pd.isna(row["text_pair"]):
            row["text_pair"] = text
        rows.append(row)
    return pd.DataFrame(rows).reset_index(drop=True)


def softmax(scores: np.ndarray) -> np.ndarray:
    """Row-wise softmax of log-likelihoods (−inf entries get probability 0)."""
    shifted = np.exp(scores - scores.max(axis=1, keepdims=True))
    return shifted / shifted.sum(axis=1, keepdims=True)


def content_free_probabilities(scores: np.ndarray) -> np.ndarray:
    """``p_cf``: the mean over content-free inputs of their class distributions, renormalised."""
    mean = softmax(scores).mean(axis=0)
    return mean / mean.sum()


def calibrate(probabilities: np.ndarray, content_free: np.ndarray) -> np.ndarray:
    """``q ∝ p / p_cf`` per row: each class's probability divided by the prompt's content-free bias towards it."""
    ratio = probabilities / content_free
    return ratio / ratio.sum(axis=1, keepdims=True)
