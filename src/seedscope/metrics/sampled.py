"""Estimators from one pool of n sampled answers per item: pass@k, pass^k, maj@k, G-Pass@k, mG-Pass@k, avg@n.

Every function takes per-item counts — ``n`` samples of which ``c`` are correct — and returns one
value per item (the mean over items is the published number). Each is the unbiased estimate over
all k-subsets of the n samples, never "the first k":

* :func:`pass_at_k` = 1 − C(n−c, k)/C(n, k) (Chen et al. 2021), as the product
  1 − Π_{j=n−c+1}^{n} (1 − k/j) that inspect_ai's ``pass_at`` and lighteval's ``PassAtK`` use;
* :func:`pass_hat_k` = C(c, k)/C(n, k) (pass^k, Yao et al. 2024; inspect_ai's ``pass_k``);
* :func:`g_pass_at_k` = P(X ≥ max(⌈τk⌉, 1)), X ~ Hypergeometric(n, c, k) (Liu et al. 2024, arXiv
  2412.13147; lighteval's ``GPassAtK``, so τ = 0 is pass@k), :func:`mg_pass_at_k` =
  (2/k) Σ_{i=⌈k/2⌉+1}^{k} P(X ≥ i);
* :func:`maj_at_k`: the chance that the plurality answer of a random k-subset is correct, a tie
  counted as the share of correct answers among the tied ones — from the multivariate
  hypergeometric law of the answer counts, in exact integers;
* :func:`avg_at_n` = c/n.

One shared check (:func:`check_pool`) refuses impossible counts and a k beyond the samples.
"""

from __future__ import annotations

import math
from collections import Counter
from functools import lru_cache
from typing import Sequence

import numpy as np

from seedscope.errors import SeedscopeError

#: the thresholds τ of G-Pass@k reported by default (the paper's)
DEFAULT_THRESHOLDS = (0.25, 0.5, 0.75, 1.0)


def check_pool(n, c, k: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(n, c)`` as whole-number arrays of one value per item, checked: 1 ≤ n, 0 ≤ c ≤ n, 1 ≤ k ≤ min n."""
    n_items, c_items = np.atleast_1d(np.asarray(n)), np.atleast_1d(np.asarray(c))
    if n_items.shape != c_items.shape or n_items.ndim != 1 or n_items.size == 0:
        raise SeedscopeError(f"sample counts need one n and one c per item, got shapes {n_items.shape} and {c_items.shape}")
    for name, values in (("n", n_items), ("c", c_items)):
        if values.dtype.kind not in "iuf" or not np.all(np.isfinite(values)) or not np.all(values == np.round(values)):
            raise SeedscopeError(f"the sample counts {name} must be whole numbers")
    n_items, c_items = n_items.astype(np.int64), c_items.astype(np.int64)
    if n_items.min() < 1:
        raise SeedscopeError("every item needs at least one sample (n ≥ 1)")
    if c_items.min() < 0 or np.any(c_items > n_items):
        raise SeedscopeError("the correct samples c of an item must lie between 0 and its n")
    if k is not None:
        check_k(k, int(n_items.min()))
    return n_items, c_items


def check_k(k, n: int) -> int:
    """``k`` as an int between 1 and ``n`` (the fewest samples of an item), or one clear error saying what n is."""
    if isinstance(k, bool) or not float(k).is_integer() or k < 1:
        raise SeedscopeError(f"k must be a whole number of samples ≥ 1, not {k}")
    if k > n:
        raise SeedscopeError(f"k = {int(k)} is more than the samples per item (n = {n}); every k must be at most n")
    return int(k)


def _per_pair(n: np.ndarray, c: np.ndarray, value) -> np.ndarray:
    """``value(n, c)`` for every item, computed once per distinct (n, c) pair."""
    pairs, inverse = np.unique(np.stack([n, c], axis=1), axis=0, return_inverse=True)
    return np.array([value(int(a), int(b)) for a, b in pairs], dtype=float)[inverse.ravel()]


def pass_at_k(n, c, k: int) -> np.ndarray:
    """Chance that at least one of k samples drawn without replacement is correct (Chen et al. 2021)."""
    n, c = check_pool(n, c, k)

    def value(total: int, right: int) -> float:
        if total - right < k:
            return 1.0
        return 1.0 - float(np.prod(1.0 - k / np.arange(total - right + 1, total + 1)))

    return _per_pair(n, c, value)


def pass_hat_k(n, c, k: int) -> np.ndarray:
    """pass^k: chance that all k samples drawn without replacement are correct, C(c, k)/C(n, k)."""
    n, c = check_pool(n, c, k)
    return _per_pair(n, c, lambda total, right: math.comb(right, k) / math.comb(total, k))


def threshold_count(k: int, tau: float) -> int:
    """How many of k samples G-Pass@k_τ needs correct: max(⌈τk⌉, 1) (lighteval's rule; τ = 0 gives pass@k)."""
    if not 0.0 <= tau <= 1.0:
        raise SeedscopeError(f"a G-Pass@k threshold τ must lie in [0, 1], not {tau}")
    return max(math.ceil(round(k * tau, 9)), 1)  # round: 0.7 × 10 is 7.000000000000001 in floating point


def _at_least(n: np.ndarray, c: np.ndarray, k: int, m: int) -> np.ndarray:
    """P(X ≥ m) for X ~ Hypergeometric(population n, c successes, k draws), per item."""
    from scipy.stats import hypergeom  # here, not at import: scipy.stats costs readers that never need it ~0.6 s

    return _per_pair(n, c, lambda total, right: float(hypergeom.sf(m - 1, total, right, k)) if m <= min(right, k) else 0.0)


def g_pass_at_k(n, c, k: int, tau: float) -> np.ndarray:
    """G-Pass@k_τ: chance that at least max(⌈τk⌉, 1) of k samples drawn without replacement are correct."""
    n, c = check_pool(n, c, k)
    return _at_least(n, c, k, threshold_count(k, tau))


def mg_pass_at_k(n, c, k: int) -> np.ndarray:
    """mG-Pass@k = (2/k) Σ_{i=⌈k/2⌉+1}^{k} G-Pass@k_{i/k}: G-Pass@k averaged over the thresholds above one half."""
    n, c = check_pool(n, c, k)
    total = np.zeros(len(n))
    for m in range(math.ceil(k / 2) + 1, k + 1):
        total += _at_least(n, c, k, m)
    return 2.0 * total / k


def avg_at_n(n, c) -> np.ndarray:
    """avg@n: the share of correct samples of each item (inspect_ai's ``mean`` reducer)."""
    n, c = check_pool(n, c)
    return c / n


def within_variance(n, c) -> np.ndarray:
    """The unbiased variance of each item's 0/1 samples, c(n−c)/(n(n−1)) (0 for a single sample): Miller's σ_i²."""
    n, c = check_pool(n, c)
    return np.where(n > 1, c * (n - c) / (n * np.maximum(n - 1, 1)), 0.0)


def maj_at_k(counts: Sequence[Sequence[int]], correct: Sequence[Sequence[float]], k: int) -> np.ndarray:
    """maj@k of each item: the mean over all k-subsets of its samples of 1[the subset's plurality answer is correct].

    ``counts[i]``: how many samples of item i gave each distinct answer; ``correct[i]``: whether
    each of those answers is correct (1/0; a fraction for an answer judged both ways). A tie
    between answers counts as the share of correct ones among them.
    """
    if len(counts) != len(correct) or len(counts) == 0:
        raise SeedscopeError("maj@k needs the answer counts and their correctness for the same items (at least one)")
    sizes = [int(sum(item)) for item in counts]
    check_pool(np.array(sizes), np.zeros(len(sizes), dtype=int), k)
    values = np.empty(len(counts))
    for i, (item_counts, item_correct) in enumerate(zip(counts, correct)):
        if len(item_counts) != len(item_correct) or min(item_counts) < 1:
            raise SeedscopeError("maj@k: every answer of an item needs a count ≥ 1 and a correctness")
        order = np.argsort(item_counts, kind="stable")
        shares = plurality_shares(tuple(int(item_counts[j]) for j in order), int(k))
        values[i] = float(np.dot(shares, np.asarray(item_correct, dtype=float)[order]))
    return values


@lru_cache(maxsize=4096)
def plurality_shares(counts: tuple[int, ...], k: int) -> tuple[float, ...]:
    """For answers with these sample counts, each one's expected share of the plurality of a random k-subset.

    Answer a wins a subset in which it is drawn j times and every other answer at most j times,
    shared with the others drawn exactly j times. With X ~ multivariate hypergeometric, its share
    is Σ_j C(m_a, j) Σ_t N_a(k − j, t) / (t + 1) / C(n, k), where N_a(s, t) counts the ways the
    other answers fill s draws, none above j, t of them at exactly j: a polynomial product over
    the other answers, in exact integers (:func:`_fill_ways`). Answers with equal counts share one value.
    """
    counts = tuple(int(m) for m in counts)
    scale = math.lcm(*range(1, len(counts) + 1))  # a tie among t + 1 answers is scale / (t + 1) of a win
    total = math.comb(sum(counts), k) * scale
    share_of = {}
    for own in set(counts):
        others = list(counts)
        others.remove(own)
        wins = 0
        for j in range(1, min(own, k) + 1):
            ways = _fill_ways(tuple(others), j, k - j)
            wins += math.comb(own, j) * sum(w * (scale // (t + 1)) for t, w in enumerate(ways))
        share_of[own] = wins / total  # exact integers, one correctly rounded division
    return tuple(share_of[m] for m in counts)


def _fill_ways(others: tuple[int, ...], j: int, draws: int) -> list[int]:
    """N(draws, t) for t = 0 … len(others): ways the ``others`` answers fill ``draws`` draws, each at most j
    times, exactly t of them j times.

    The bivariate polynomial product runs as one big-integer product (Kronecker substitution):
    the coefficient of x^s y^t sits in bit slot s·(T+1) + t, each slot wide enough for any count
    (< 2^(Σ others)), so Python's exact multiplication does the convolutions without carries.
    """
    bits, width = sum(others) + 2, len(others) + 1
    keep = (1 << (bits * width * (draws + 1))) - 1  # slots of s ≤ draws: higher s never flows back
    product = 1
    for m, repeats in Counter(others).items():
        factor = sum(math.comb(m, x) << (bits * width * x) for x in range(min(m, j - 1, draws) + 1))
        if m >= j and j <= draws:  # drawn exactly j times: one more tie
            factor += math.comb(m, j) << (bits * (width * j + 1))
        product = (product * pow(factor, repeats)) & keep
    slot = (1 << bits) - 1
    return [(product >> (bits * (width * draws + t))) & slot for t in range(width)]
