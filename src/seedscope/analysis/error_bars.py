"""Error bars over examples and over seeds, side by side (Miller 2024, "Adding Error Bars to Evals").

The spread over seeds says nothing about how a score would move on another draw of the
evaluation examples, and the reverse; these pure functions give both:

* :func:`standard_error`: SE = sqrt(s² / N), s² the sample variance (divisor N − 1) of the
  per-example scores of one run (vectorised over runs);
* :func:`clustered_standard_error`: SE_C = sqrt(C / (C − 1)) · sqrt(Σ_c (Σ_{i∈c} d_i)²) / N with
  d_i = x_i − x̄, for examples that come in clusters (MultiRC answers of one question, COPA
  pairs, several prompts of one item). The small-sample factor sqrt(C / (C − 1)) is applied by
  default, so one example per cluster gives the plain SE; ``small_sample=False`` drops it;
* :func:`variance_split`: the variance of one score, seed part (sample variance of the per-run
  scores) plus example-sampling part (mean squared SE), and which one dominates;
* :func:`t_interval`: Student-t interval of a mean over few seeds, beside the bootstrap;
* :func:`minimum_detectable_difference`: (z_{1−α/2} + z_{1−β}) · sd / sqrt(S), normal approximation.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seedscope.analysis.checks import check_scores
from seedscope.errors import SeedscopeError
from seedscope.metrics.micro import BLOCK_VALUES, run_blocks
from seedscope.metrics.resampling import clipped, interval
from seedscope.validation import check_confidence, check_power


def _per_example(values, what: str) -> np.ndarray:
    """Per-example scores as runs × examples (a 1-D input is one run); numbers, at least two examples.

    The array keeps its dtype (0/1 correctness may stay boolean): the functions below work one
    run at a time, so 100 runs × 10⁶ examples never become one float64 array.
    """
    array = np.asarray(values)
    array = array[None, :] if array.ndim == 1 else array
    if array.ndim != 2 or array.shape[1] < 2:
        raise SeedscopeError(f"{what} needs at least two examples per run, got shape {array.shape}")
    if array.dtype.kind not in "biuf":
        array = array.astype(float)
    if array.dtype.kind == "f" and not np.isfinite(array).all():
        raise SeedscopeError(f"{what}: per-example scores contain a NaN or infinite value")
    return array


def standard_error(values) -> np.ndarray:
    """SE of each run's mean over its examples: sqrt(s² / N), s² with divisor N − 1 (one value per run).

    s² is numpy's ``var(ddof=1)`` step by step (the same numbers), a block of runs at a time in one reused float64
    buffer (:func:`~seedscope.metrics.micro.run_blocks`): a fresh 10⁶-float temporary for each run costs more in
    page faults than the arithmetic, and thousands of short runs one numpy call each cost more than one block.
    """
    array = _per_example(values, "the standard error")
    n_runs, n = array.shape
    buffer, variances = np.empty(min(n_runs * n, max(n, BLOCK_VALUES))), np.empty(n_runs)
    for block in run_blocks(n_runs, n):
        rows = array[block]
        squares = buffer[: rows.size].reshape(rows.shape)
        totals = (np.count_nonzero(rows, axis=1) if rows.dtype == bool
                  else np.add.reduce(rows, axis=1, dtype=np.float64))  # each row's sum, as a row alone sums
        np.subtract(rows, (totals / n)[:, None], out=squares)
        np.multiply(squares, squares, out=squares)
        variances[block] = np.add.reduce(squares, axis=1) / (n - 1)
    return np.sqrt(variances / n)


def clustered_standard_error(values, clusters, *, small_sample: bool = True) -> np.ndarray:
    """Cluster-robust SE of each run's mean: sqrt(Σ_c (Σ_{i∈c} d_i)²) / N, times sqrt(C/(C−1)) by default.

    ``clusters``: one label per example (any hashable values), shared by every run.
    """
    array = _per_example(values, "the clustered standard error")
    labels = np.asarray(clusters)
    if labels.shape != (array.shape[1],):
        raise SeedscopeError(f"clustered standard error: {labels.size} cluster labels for {array.shape[1]} examples")
    if pd.isna(labels).any():
        raise SeedscopeError("clustered standard error: an example has no cluster")
    codes, uniques = pd.factorize(labels)
    n_clusters = len(uniques)
    if n_clusters < 2:
        raise SeedscopeError("a clustered standard error needs at least two clusters")
    se = np.empty(array.shape[0])
    for run, row in enumerate(array):
        row = row.astype(float)
        sums = np.bincount(codes, weights=row - row.mean(), minlength=n_clusters)
        se[run] = np.sqrt(sums @ sums) / array.shape[1]
    return se * np.sqrt(n_clusters / (n_clusters - 1)) if small_sample else se


def variance_split(per_run_scores, standard_errors) -> pd.Series:
    """Total variance of one run's score = seed part + example-sampling part.

    Seed part: sample variance (divisor S − 1) of the S per-run scores on the fixed examples.
    Example part: mean over runs of SE² (how far a score moves on another draw of as many
    examples). Returns both, their sum, the seed share and which part dominates.
    """
    scores = check_scores(per_run_scores, "the variance split", 2)
    errors = check_scores(standard_errors, "the variance split (standard errors)", 1)
    seed_part = float(scores.var(ddof=1))
    example_part = float(np.mean(errors**2))
    total = seed_part + example_part
    share = seed_part / total if total > 0 else np.nan
    dominant = "none" if total == 0 else ("seeds" if seed_part > example_part else "examples")
    return pd.Series({"seed_variance": seed_part, "example_variance": example_part, "total_variance": total,
                      "seed_share": share, "dominant": dominant})


def t_interval(values, confidence: float = 0.95) -> tuple[float, float]:
    """Student-t interval of the mean of S ≥ 2 values: mean ± t_{1−α/2, S−1} · s / sqrt(S)."""
    array = check_scores(values, "a t-interval", 2)
    low, high = interval(None, array, method="t", confidence=confidence)
    return float(low), float(high)


def bounded_t_interval(values, confidence: float, bounds: tuple[float, float] | None,
                       what: str) -> tuple[float, float, bool]:
    """:func:`t_interval` within ``bounds``, the metric's range (None: none known), and whether it had to be clipped:
    then a :class:`~seedscope.errors.ClippedIntervalWarning` names ``what``."""
    low, high, moved = clipped(*t_interval(values, confidence), bounds, f"{what}: the t interval over "
                               f"{len(np.ravel(values))} runs")
    return float(low), float(high), bool(moved)


def minimum_detectable_difference(sd: float, n: int, *, confidence: float = 0.95, power: float = 0.8) -> float:
    """Smallest true difference a two-sided test at level 1 − ``confidence`` detects with ``power``.

    (z_{1−α/2} + z_{power}) · sd / sqrt(n): ``sd`` is the standard deviation of one paired
    difference (per seed, or per example) and ``n`` how many are averaged.
    """
    alpha = check_confidence(confidence)
    check_power(power)
    if n < 1:
        raise SeedscopeError(f"a minimum detectable difference needs at least one observation, not {n}")
    if not np.isfinite(sd) or sd < 0:
        raise SeedscopeError(f"the standard deviation of a difference must be finite and non-negative, not {sd}")
    from scipy import special  # imported as late as resampling's, for the same reason

    return float((special.ndtri(1 - alpha) + special.ndtri(power)) * sd / np.sqrt(n))
