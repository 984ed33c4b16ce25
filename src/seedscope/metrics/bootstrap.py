"""Bootstrap confidence intervals of a mean over runs.

Percentile method: resample the S run values with replacement ``n_boot`` times, take the mean
of each resample, and report the (1−confidence)/2 and (1+confidence)/2 quantiles of those
means. All metrics share one set of resampling indices drawn from a ``numpy`` Generator with
an explicit seed, so the intervals are reproducible and computed in one vectorised step.
"""

from __future__ import annotations

import numpy as np

from seedscope.errors import SeedscopeError


def bootstrap_mean_ci(
    values: np.ndarray, *, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap CI of the column means of ``values`` (S runs × M metrics).

    Returns ``(low, high)``, each of length M. NaN values propagate (a metric that is NaN in
    any run has a NaN interval) rather than being silently dropped.
    """
    if not 0 < confidence < 1:
        raise SeedscopeError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    if n_boot < 1:
        raise SeedscopeError(f"the number of bootstrap resamples must be at least 1, not {n_boot}")
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    n_runs = values.shape[0]
    rng = np.random.default_rng(seed)
    index = rng.integers(0, n_runs, size=(n_boot, n_runs))
    means = values[index].mean(axis=1)  # n_boot × M
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha], axis=0)
    return low, high
