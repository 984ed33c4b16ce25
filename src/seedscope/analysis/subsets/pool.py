"""The whole pool: each system's score with a bootstrap CI over examples, and paired tests of each pair."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from seedscope.analysis.significance import adjust_p_values, paired_swap_test
from seedscope.analysis.subsets.scores import SYSTEM, ScorePool
from seedscope.analysis.subsets.variance import pair_names
from seedscope.errors import SeedscopeError
from seedscope.metrics.resampling import LARGE_N, clipped, interval
from seedscope.validation import check_confidence, check_resamples, validate_params

#: values gathered per chunk when a resampling is materialised
CHUNK_VALUES = 20_000_000


def _batch(pool_size: int, width: int) -> int:
    return max(1, CHUNK_VALUES // max(1, pool_size * width))


def _pool_interval(statistic, values: np.ndarray, n_boot: int, confidence: float, seed, method: str) -> tuple[float, float]:
    """Interval of ``statistic`` of the resampled column means of ``values`` (examples × columns), resampled by
    position; from :data:`LARGE_N` examples on, the means are drawn from their exact moments (percentile)."""
    large = len(values) >= LARGE_N
    with np.errstate(all="ignore"):
        low, high = interval(statistic, values, of_means=True, moments=large, method="percentile" if large else method,
                             batch=_batch(*values.shape), n_resamples=n_boot, confidence=confidence, seed=seed)
    return float(low), float(high)


@validate_params(confidence=check_confidence)
def full_pool_ci(
    pool: ScorePool, *, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0, method: str = "percentile"
) -> pd.DataFrame:
    """Each system's score on the whole pool with a bootstrap CI over examples (scipy.stats.bootstrap).

    The examples are resampled by position, so the ratio score's three columns move
    together. The same ``seed`` gives the same resamples for every system and the same interval.
    From :data:`~seedscope.metrics.resampling.LARGE_N` examples on, the resampled column means
    are drawn from their exact mean and covariance instead (percentile interval).
    """
    rows = []
    for m, name in enumerate(pool.systems):
        values = pool.values[m]
        point = float(pool.theta(values.mean(axis=0)))
        if math.isnan(point):
            raise SeedscopeError(
                f"ratio score undefined: m({pool.spec.columns[2]}) − m({pool.spec.columns[1]}) is 0 for system "
                f"{name} on the full pool, so the denominator is zero"
            )
        low, high = _pool_interval(pool.theta, values, n_boot, confidence, seed, method)
        if pool.spec.kind != "ratio":  # a mean lies within its values: the large-pool normal limit may not
            low, high, _ = clipped(low, high, (float(values.min()), float(values.max())),
                                   f"{name}: the full-pool interval of the mean score")
        rows.append({"score": point, "ci_low": float(low), "ci_high": float(high)})
    return pd.DataFrame(rows, index=pd.Index(pool.systems, name=SYSTEM))


@validate_params(confidence=check_confidence, n_permutations=check_resamples)
def paired_pool_tests(
    pool: ScorePool,
    *,
    n_boot: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Per pair on the full pool: Δ = θ_A − θ_B, its paired bootstrap CI and a paired permutation p-value
    (also Holm- and Bonferroni-adjusted over the pairs).

    Paired: one resample of example positions serves both systems (never two independent
    resamples). The permutation test swaps A's and B's per-example values on a random set of
    examples (scipy.stats.permutation_test, one-sample sign flips used as the swap mask;
    exact enumeration when 2^N ≤ ``n_permutations``); two-sided p-value. From
    :data:`~seedscope.metrics.resampling.LARGE_N` examples on, both resamplings draw the column
    means (the swapped sums) from their exact mean and covariance.
    """
    index = {name: m for m, name in enumerate(pool.systems)}
    rows = []
    for a, b in pair_names(pool.systems):
        values_a, values_b = pool.values[index[a]], pool.values[index[b]]
        both = np.concatenate([values_a, values_b], axis=1)
        width = values_a.shape[1]

        def difference(means: np.ndarray) -> np.ndarray:  # one draw of both systems' means: the pairing
            return pool.theta(means[..., :width]) - pool.theta(means[..., width:])

        delta = float(pool.theta(values_a.mean(axis=0)) - pool.theta(values_b.mean(axis=0)))
        low, high = _pool_interval(difference, both, n_boot, confidence, seed, "percentile")
        p_value = paired_swap_test(values_a, values_b, pool.theta, n_permutations=n_permutations, seed=seed)
        rows.append({"system_a": a, "system_b": b, "delta": delta, "ci_low": low, "ci_high": high, "p_value": p_value})
    columns = ["system_a", "system_b", "delta", "ci_low", "ci_high", "p_value"]
    frame = pd.DataFrame(rows, columns=columns).set_index(["system_a", "system_b"])
    for method in ("holm", "bonferroni"):  # several pairs are several tests, as in compare
        frame[f"p_{method}"] = adjust_p_values(frame["p_value"], method)
    return frame
