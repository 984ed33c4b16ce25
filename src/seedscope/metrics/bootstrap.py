"""Bootstrap confidence intervals of a mean over runs.

Percentile method: resample the S run values with replacement ``n_boot`` times, take the mean
of each resample, and report the (1−confidence)/2 and (1+confidence)/2 quantiles of those
means. All metrics share one set of resampling indices drawn from a ``numpy`` Generator with
an explicit seed, so the intervals are reproducible and computed in one vectorised step.
"""

from __future__ import annotations

import numpy as np

from seedscope.errors import SeedscopeError


def check_confidence(confidence: float) -> float:
    """Refuse a confidence level outside (0, 1); return the share α/2 = (1 − confidence)/2 cut from each tail."""
    if not 0 < confidence < 1:
        raise SeedscopeError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    return (1 - confidence) / 2


def check_resamples(n_resamples: int) -> None:
    """Refuse a resampling count below one (a bootstrap or permutation needs at least one draw)."""
    if n_resamples < 1:
        raise SeedscopeError(f"the number of resamples must be at least 1, not {n_resamples}")


def bootstrap_mean_ci(
    values: np.ndarray, *, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap CI of the column means of ``values`` (S runs × M metrics).

    Returns ``(low, high)``, each of length M. NaN values propagate (a metric that is NaN in
    any run has a NaN interval) rather than being silently dropped.
    """
    alpha = check_confidence(confidence)
    check_resamples(n_boot)
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n_runs = values.shape[0]
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n_runs, size=(n_boot, n_runs))
    means = values[index].mean(axis=1)  # n_boot × M
    low, high = np.quantile(means, [alpha, 1 - alpha], axis=0)
    return low, high
