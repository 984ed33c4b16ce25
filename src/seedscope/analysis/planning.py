"""Planning: the expected best of n runs, how many seeds a stable estimate needs, and how many items and samples
per item a target interval (or detectable difference) needs under sampling."""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np
import pandas as pd
from scipy import special
from scipy.special import gammaln

from seedscope.analysis.checks import check_scores
from seedscope.errors import SeedscopeError
from seedscope.metrics.resampling import interval
from seedscope.validation import check_confidence, check_power, check_resamples


def expected_max_performance(scores, n_max: int | None = None, *, replace: bool = True) -> pd.DataFrame:
    """Expected best validation score of n runs, n = 1 … n_max (Dodge et al. 2019), exact.

    With replacement (the paper's formula over the empirical CDF F of the N scores):
    E[max_n] = Σ_i v_(i) [(i/N)^n − ((i−1)/N)^n], and ``std`` its spread. Without replacement
    (n ≤ N): P(max = v_(i)) = C(i−1, n−1)/C(N, n).
    """
    values = np.sort(check_scores(scores, "expected maximum performance"))
    count = len(values)
    n_max = count if n_max is None else int(n_max)
    if n_max < 1 or (not replace and n_max > count):
        raise SeedscopeError(f"the number of runs must lie between 1 and {count if not replace else 'any'}, not {n_max}")
    ranks = np.arange(1, count + 1)
    rows = []
    for n in range(1, n_max + 1):
        if replace:
            weights = (ranks / count) ** n - ((ranks - 1) / count) ** n
        else:
            log_weights = _log_comb(ranks - 1, n - 1) - _log_comb(count, n)
            weights = np.where(ranks >= n, np.exp(log_weights), 0.0)
        mean = float(weights @ values)
        spread = math.sqrt(max(0.0, float(weights @ values**2) - mean**2))
        rows.append({"n_runs": n, "expected_max": mean, "std": spread})
    return pd.DataFrame(rows).set_index("n_runs")


def _log_comb(n, k) -> np.ndarray:
    n, k = np.asarray(n, dtype=float), np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(k <= n, gammaln(n + 1) - gammaln(k + 1) - gammaln(np.maximum(n - k, 0) + 1), -np.inf)


def seeds_needed(
    scores,
    sizes: Sequence[int] | None = None,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """How the uncertainty of the mean and of VAR shrinks with the number of seeds S.

    For each size s, ``n_boot`` sets of s seeds are drawn with replacement from the observed
    per-seed scores; the central ``confidence`` range of their mean and of their VAR
    (population std, the published form) is reported with its width. Sizes may exceed the
    observed count: ``extrapolated`` marks those rows, a projection from the observed runs.
    """
    values = check_scores(scores, "the seeds-needed curve", 2)
    check_confidence(confidence)
    check_resamples(n_boot)
    if sizes is None:
        sizes = np.unique(np.round(np.geomspace(2, max(10, 4 * len(values)), 8)).astype(int))
    rows = []
    for size in sizes:
        if int(size) < 2:
            raise SeedscopeError(f"a seeds-needed size must be at least 2, not {size}")
        low, high = interval(lambda drawn: np.stack([drawn.mean(axis=1), drawn.std(axis=1)], axis=1), values,
                             size=int(size), n_resamples=n_boot, confidence=confidence, seed=[seed, int(size)],
                             rowwise=True)
        (m_low, v_low), (m_high, v_high) = low, high
        rows.append(
            {
                "n_seeds": int(size),
                "mean_ci_low": float(m_low),
                "mean_ci_high": float(m_high),
                "mean_ci_width": float(m_high - m_low),
                "var_ci_low": float(v_low),
                "var_ci_high": float(v_high),
                "var_ci_width": float(v_high - v_low),
                "extrapolated": int(size) > len(values),
            }
        )
    return pd.DataFrame(rows).set_index("n_seeds")


def sampling_plan(
    between: float,
    within: float,
    *,
    items: int,
    samples: Sequence[int] = (1, 2, 4, 8, 16, 32, 64),
    targets: Sequence[float] = (0.01, 0.02, 0.05),
    detect: bool = False,
    confidence: float = 0.95,
    power: float = 0.8,
) -> pd.DataFrame:
    """How many items N and samples per item K a target needs, from a pilot's variance components (Miller 2024).

    The mean of N items with K samples each has SE² = (Var(x) + E[σ²]/K) / N (``between`` =
    Var(x), ``within`` = E[σ²]: :func:`seedscope.analysis.sampling.variance_components`, or those
    of paired differences for a comparison). Per K: the interval half-width z_{1−α/2}·SE at
    ``items`` items (with ``detect``: the minimum detectable difference (z_{1−α/2} + z_{power})·SE)
    and, per target, the items it needs: ⌈z²(Var(x) + E[σ²]/K) / target²⌉. More samples cannot push
    the need below z²·Var(x)/target² items: the items' own spread.
    """
    alpha = check_confidence(confidence)
    check_power(power)
    for name, value in (("between-item variance", between), ("within-item variance", within)):
        if not np.isfinite(value) or value < 0:
            raise SeedscopeError(f"the {name} must be finite and non-negative, not {value}")
    if items < 1 or any(int(k) < 1 for k in samples) or any(not t > 0 for t in targets):
        raise SeedscopeError("a sampling plan needs at least one item, sample counts ≥ 1 and positive targets")
    z = special.ndtri(1 - alpha) + (special.ndtri(power) if detect else 0.0)
    what = "mdd" if detect else "half_width"
    rows = []
    for k in sorted({int(k) for k in samples}):
        variance = between + within / k
        row = {"n_samples": k, what: float(z * math.sqrt(variance / items))}
        row.update({f"items_for_{target:g}": int(math.ceil(z**2 * variance / target**2 - 1e-9)) for target in targets})
        rows.append(row)
    return pd.DataFrame(rows).set_index("n_samples")
