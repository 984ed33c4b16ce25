"""Aggregates of per-run scores as rliable defines them: the interquartile mean (with its stratified
bootstrap CI) and the probability of improvement."""

from __future__ import annotations

import numpy as np
from scipy import stats

from seedscope.analysis.checks import check_scores
from seedscope.errors import SeedscopeError
from seedscope.metrics.resampling import interval


def interquartile_mean(scores) -> float:
    """IQM: mean of the middle 50 % of all scores (runs × tasks flattened), cutting floor(0.25·n) per end."""
    values = check_scores(scores, "the interquartile mean")
    return float(stats.trim_mean(values, 0.25))


def probability_of_improvement(x, y) -> float:
    """P(X > Y) + ½ P(X = Y) over all run pairs, per task, averaged over tasks (rliable).

    ``x``: runs × tasks of system X (a 1-D array is one task); ``y`` likewise (its runs may differ).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    y = y[:, None] if y.ndim == 1 else y
    if x.shape[1] != y.shape[1]:
        raise SeedscopeError(f"probability of improvement needs the same tasks: {x.shape[1]} vs {y.shape[1]}")
    check_scores(x, "probability of improvement (X)")
    check_scores(y, "probability of improvement (Y)")
    # per task, for each x how many y lie below it and how many equal it, from y sorted: O((n + m) log m), no n × m
    ordered = np.sort(y, axis=0)
    below = np.stack([np.searchsorted(ordered[:, t], x[:, t], side="left") for t in range(x.shape[1])], axis=1)
    upto = np.stack([np.searchsorted(ordered[:, t], x[:, t], side="right") for t in range(x.shape[1])], axis=1)
    pairs = x.shape[0] * y.shape[0]
    greater = below.sum(axis=0) / pairs
    equal = (upto - below).sum(axis=0) / pairs
    return float((greater + 0.5 * equal).mean())


def interquartile_mean_ci(
    scores, *, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float, float]:
    """(IQM, low, high): percentile CI from rliable's stratified bootstrap.

    ``scores``: runs × tasks (a 1-D array is one task). Each replicate redraws the runs of every
    task separately (with replacement, as many as the task has), so each task keeps its weight,
    and takes the IQM of all drawn scores; the interval is the central ``confidence`` range.
    """
    values = np.asarray(scores, dtype=float)
    values = values[:, None] if values.ndim == 1 else values
    check_scores(values, "the interquartile mean CI", 2)
    columns = [values[:, task] for task in range(values.shape[1])]  # each task a stratum, redrawn on its own

    def pooled_iqm(*drawn: np.ndarray) -> np.ndarray:  # n_boot × (runs · tasks) → n_boot
        return stats.trim_mean(np.concatenate(drawn, axis=1), 0.25, axis=1)

    low, high = interval(pooled_iqm, *columns, n_resamples=n_boot, confidence=confidence, seed=seed, rowwise=True)
    return interquartile_mean(values), float(low), float(high)
