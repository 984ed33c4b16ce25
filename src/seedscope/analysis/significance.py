"""Significance tests of paired results, and adjustment of p-values for multiple comparisons.

* McNemar with no discordant pair returns statistic 0 and p = 1 (HF evaluate divides by 0);
* the paired permutation test swaps two systems' per-example values (sign flips of the
  difference for a mean), exact when every swap pattern can be enumerated;
* the Wilcoxon signed-rank test of matched seeds is scipy's, with all-tied seeds giving p = 1;
* Holm's step-down keeps each adjusted p-value in its input position and is monotone
  (deepsig's correction mis-orders them).
"""

from __future__ import annotations

from typing import Any, Callable, Literal

import numpy as np
from scipy import stats

from seedscope.analysis.checks import check_scores
from seedscope.errors import SeedscopeError
from seedscope.metrics.resampling import LARGE_N, check_resamples, generator, normal_draws

#: with fewer discordant pairs than this McNemar uses the exact binomial test
MCNEMAR_EXACT_BELOW = 25
#: values materialised per chunk of a permutation test (the swaps drawn, and so the p-value, do not depend on it)
CHUNK_VALUES = 2_000_000


def mcnemar(correct_a, correct_b, *, exact: bool | None = None) -> dict[str, Any]:
    """McNemar's test on paired per-example correctness of two systems (one seed each).

    b = A right & B wrong, c = A wrong & B right. ``exact=None`` uses the exact binomial test
    when b + c < 25, else the χ² statistic (b − c)²/(b + c) without continuity correction.
    No discordant pair: statistic 0, p = 1 (never a division by zero).
    """
    a, b_arr = _correctness(correct_a, "A"), _correctness(correct_b, "B")
    if a.shape != b_arr.shape:
        raise SeedscopeError(f"McNemar needs the same examples for both systems: {a.shape} vs {b_arr.shape}")
    return _mcnemar_counts(int((a & ~b_arr).sum()), int((~a & b_arr).sum()), exact)


def mcnemar_runs(correct_a, correct_b, *, exact: bool | None = None) -> list[dict[str, Any]]:
    """:func:`mcnemar` of each row (one matched seed) of two runs × examples correctness arrays: the discordant
    counts of every row at once, each distinct pair of counts tested once (10,000 seeds in a fraction of a second)."""
    a, b_arr = _correctness(correct_a, "A"), _correctness(correct_b, "B")
    if a.shape != b_arr.shape or a.ndim != 2:
        raise SeedscopeError(f"McNemar per seed needs runs × examples of the same shape: {a.shape} vs {b_arr.shape}")
    tested: dict[tuple[int, int], dict[str, Any]] = {}
    rows = []
    for counts in zip(np.count_nonzero(a & ~b_arr, axis=1).tolist(), np.count_nonzero(~a & b_arr, axis=1).tolist()):
        if counts not in tested:
            tested[counts] = _mcnemar_counts(*counts, exact)
        rows.append(dict(tested[counts]))
    return rows


def _mcnemar_counts(b: int, c: int, exact: bool | None) -> dict[str, Any]:
    """McNemar's test from the discordant counts b (A right, B wrong) and c (A wrong, B right)."""
    discordant = b + c
    if discordant == 0:
        return {"b": b, "c": c, "statistic": 0.0, "p_value": 1.0, "method": "no discordant pairs"}
    statistic = (b - c) ** 2 / discordant
    use_exact = discordant < MCNEMAR_EXACT_BELOW if exact is None else exact
    if use_exact:
        p_value = float(stats.binomtest(min(b, c), discordant, 0.5).pvalue)
        return {"b": b, "c": c, "statistic": float(statistic), "p_value": p_value, "method": "exact binomial"}
    p_value = float(stats.chi2.sf(statistic, 1))
    return {"b": b, "c": c, "statistic": float(statistic), "p_value": p_value, "method": "chi-square"}


def _correctness(values, system: str) -> np.ndarray:
    """Per-example correctness as booleans; anything but 0/1/True/False (a NaN, a 2) is refused, not cast."""
    array = np.asarray(values)
    if array.dtype != bool:
        numeric = np.asarray(array, dtype=float)
        bad = ~np.isin(numeric, (0.0, 1.0))
        if bad.any():
            raise SeedscopeError(f"McNemar needs per-example correctness as 0/1 or True/False; system {system} has "
                                 f"{array.ravel()[np.flatnonzero(bad.ravel())[0]]!r}")
        array = numeric == 1.0
    return array


def paired_permutation_test(scores_a, scores_b, *, n_resamples: int = 9999, seed: int = 0) -> float:
    """Two-sided p-value of the mean difference on matched seeds (random sign flips of A − B).

    The swap test below with θ = the mean: swapping A's and B's value of a seed flips the sign
    of its difference. Exact over all 2^S sign patterns when 2^S ≤ ``n_resamples``.
    """
    a = check_scores(scores_a, "the paired permutation test (A)", 2)
    b = check_scores(scores_b, "the paired permutation test (B)", 2)
    if len(a) != len(b):
        raise SeedscopeError(f"the paired permutation test needs matched seeds: {len(a)} vs {len(b)} values")
    return paired_swap_test(a[:, None], b[:, None], lambda means: means[..., 0], n_permutations=n_resamples, seed=seed)


def wilcoxon_signed_rank(scores_a, scores_b) -> dict[str, float]:
    """Wilcoxon signed-rank test of matched seeds (scipy; exact for small S without ties).

    Returns the statistic (the smaller rank sum) and the two-sided p-value. Seeds on which the
    systems tie are dropped (Wilcox's rule); when every seed ties there is no evidence of a
    difference: statistic 0, p = 1.
    """
    a = check_scores(scores_a, "the Wilcoxon signed-rank test (A)", 2)
    b = check_scores(scores_b, "the Wilcoxon signed-rank test (B)", 2)
    if len(a) != len(b):
        raise SeedscopeError(f"the Wilcoxon signed-rank test needs matched seeds: {len(a)} vs {len(b)} values")
    if np.all(a == b):
        return {"statistic": 0.0, "p_value": 1.0}
    result = stats.wilcoxon(a, b, zero_method="wilcox", alternative="two-sided")
    return {"statistic": float(result.statistic), "p_value": float(result.pvalue)}


def paired_swap_test(
    values_a: np.ndarray,
    values_b: np.ndarray,
    theta: Callable[[np.ndarray], np.ndarray],
    *,
    n_permutations: int = 2000,
    seed: int = 0,
) -> float:
    """Two-sided p-value of θ(A) − θ(B) under random per-example swaps of A's and B's values.

    ``values_a``/``values_b``: N × C per-example columns; ``theta`` maps column means (… × C)
    to a score. Under the null hypothesis the two systems are exchangeable on every example.
    """
    check_resamples(n_permutations)
    n_examples, width = values_a.shape
    base = values_a.sum(axis=0)
    gap = values_b - values_a  # adding gap[t] swaps example t from A to B

    def swapped(moved: np.ndarray) -> np.ndarray:
        mean_a = (base + moved) / n_examples
        mean_b = (values_b.sum(axis=0) - moved) / n_examples
        return theta(mean_a) - theta(mean_b)

    def statistic(signs: np.ndarray, axis: int = -1) -> np.ndarray:
        return swapped((signs < 0).astype(float) @ gap)  # … × C

    if n_examples >= LARGE_N:  # each example swapped with probability ½: the swapped sum's exact moments
        with np.errstate(all="ignore"):
            null = swapped(normal_draws(gap.sum(axis=0) / 2, gap.T @ gap / 4, n_permutations, generator(seed)))
            observed = swapped(np.zeros(width))
        less, greater = (1 + int((null <= observed).sum())), (1 + int((null >= observed).sum()))
        return float(min(1.0, 2 * min(less, greater) / (1 + n_permutations)))

    with np.errstate(all="ignore"):
        result = stats.permutation_test(
            (np.ones(n_examples),),
            statistic,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_permutations,
            batch=max(1, CHUNK_VALUES // max(1, n_examples)),
            alternative="two-sided",
            rng=generator(seed),
        )
    return float(result.pvalue)


def bonferroni(p_values) -> np.ndarray:
    """min(1, m·p) for each of m p-values (input order kept)."""
    p = _p_values(p_values)
    return np.minimum(1.0, len(p) * p)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values, in input order.

    Sorted ascending, p_(i) is multiplied by (m − i + 1); a running maximum keeps the adjusted
    values monotone, so "adjusted p ≤ α" gives exactly the rejections of the sequential procedure.
    """
    p = _p_values(p_values)
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted


def adjust_p_values(p_values, method: Literal["holm", "bonferroni", "bh"] = "holm") -> np.ndarray:
    """Family-wise (holm, bonferroni) or false-discovery-rate (bh: Benjamini–Hochberg) adjustment."""
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    if method == "bh":
        return stats.false_discovery_control(_p_values(p_values), method="bh")
    raise SeedscopeError(f"unknown p-value adjustment '{method}': use holm, bonferroni or bh")


def _p_values(p_values) -> np.ndarray:
    p = np.asarray(p_values, dtype=float).ravel()
    if len(p) and (np.isnan(p).any() or (p < 0).any() or (p > 1).any()):
        raise SeedscopeError("p-values must lie in [0, 1]")
    return p
