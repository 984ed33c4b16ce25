"""The one resampling helper: bootstrap draws from an explicit seed, and percentile intervals.

Every bootstrap in seedscope (metric CIs over runs, differences between systems, ASO, the
joint seed × example bootstrap, seeds-needed curves, factor-importance intervals) draws its
indices here, from a ``numpy`` Generator seeded explicitly, so the same seed gives the same
interval; paired resamples use one draw for both sides. (Score functions of a whole example
pool are resampled through ``scipy.stats.bootstrap``, also seeded.)
"""

from __future__ import annotations

import numpy as np

from seedscope.errors import SeedscopeError


def check_confidence(confidence: float) -> float:
    """Refuse a confidence level outside (0, 1); return the share α/2 = (1 − confidence)/2 cut from each tail."""
    if not 0 < confidence < 1:
        raise SeedscopeError(f"confidence must lie strictly between 0 and 1, not {confidence}")
    return (1 - confidence) / 2


#: the most resamples (bootstrap draws, permutations) any command makes: beyond it memory or time run out,
#: and the Monte-Carlo error of a percentile is already far below the third decimal
MAX_RESAMPLES = 1_000_000


def check_resamples(n_resamples: int) -> None:
    """Refuse a resampling count below one or above :data:`MAX_RESAMPLES` (the same rule in every command)."""
    if n_resamples < 1:
        raise SeedscopeError(f"the number of resamples must be at least 1, not {n_resamples}")
    if n_resamples > MAX_RESAMPLES:
        raise SeedscopeError(
            f"{n_resamples:,} resamples is more than seedscope draws ({MAX_RESAMPLES:,} at most, which bounds memory "
            "and time; 10,000 already gives percentiles to about ±0.005)"
        )


#: from this many examples on, a resampling of examples whose statistic is a function of column means draws those
#: means from their exact mean and covariance (the normal limit of the multinomial draw) instead of drawing every
#: example: at a million examples the draw would cost n_resamples × 10⁶ indices for no visible difference
LARGE_N = 10_000


def normal_draws(mean: np.ndarray, covariance: np.ndarray, n_draws: int, rng: np.random.Generator) -> np.ndarray:
    """``n_draws`` × C normal vectors with the given mean and (positive semi-definite) covariance."""
    return rng.multivariate_normal(np.asarray(mean, float), np.asarray(covariance, float), size=n_draws, method="eigh")


def resampled_column_means(values: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """``n_boot`` × C column means of ``values`` (N × C) over bootstrap resamples of its rows, for N ≥ LARGE_N:
    drawn from their exact mean (the column means) and covariance (the rows' population covariance ÷ N)."""
    values = np.asarray(values, float)
    covariance = np.atleast_2d(np.cov(values, rowvar=False, bias=True)) / len(values)
    return normal_draws(values.mean(axis=0), covariance, n_boot, rng)


def generator(seed) -> np.random.Generator:
    """A fresh generator for one resampling (``seed`` may be an int or a sequence of ints)."""
    return np.random.default_rng(seed)


def resample_indices(rng: np.random.Generator, n_boot: int, size: int) -> np.ndarray:
    """``n_boot`` × ``size`` positions drawn with replacement from ``range(size)``: one bootstrap sample per row."""
    return rng.integers(0, size, size=(n_boot, size))


def resample_counts(rng: np.random.Generator, n_boot: int, size: int) -> np.ndarray:
    """How often each of ``size`` items is drawn in each of ``n_boot`` bootstrap samples (float weights)."""
    draws = resample_indices(rng, n_boot, size) + size * np.arange(n_boot)[:, None]
    return np.bincount(draws.ravel(), minlength=n_boot * size).reshape(n_boot, size).astype(float)


def percentile_interval(replicates: np.ndarray, confidence: float, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """The central ``confidence`` range of bootstrap replicates along ``axis`` (percentile method)."""
    alpha = check_confidence(confidence)
    low, high = np.quantile(replicates, [alpha, 1 - alpha], axis=axis)
    return low, high


def bootstrap_mean_ci(
    values: np.ndarray, *, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Percentile-bootstrap CI of the column means of ``values`` (S runs × M metrics).

    Returns ``(low, high)``, each of length M. NaN values propagate (a metric that is NaN in
    any run has a NaN interval) rather than being silently dropped. All metrics share one set
    of resampled runs.
    """
    check_confidence(confidence)
    check_resamples(n_boot)
    values = np.asarray(values, dtype=float)
    if values.ndim == 1:
        values = values[:, None]
    means = values[resample_indices(generator(seed), n_boot, values.shape[0])].mean(axis=1)  # n_boot × M
    return percentile_interval(means, confidence)
