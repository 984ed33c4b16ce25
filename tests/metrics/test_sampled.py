"""The sampling estimators: hand-worked values, and every one against brute force over all k-subsets."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from seedscope.errors import SeedscopeError
from seedscope.metrics import sampled


def subset_means(scores, k, value) -> float:
    """Mean over every k-subset of one item's samples of ``value(subset)``: the slow definition."""
    subsets = list(itertools.combinations(scores, k))
    return sum(value(subset) for subset in subsets) / len(subsets)


def test_hand_worked_values():
    # n = 4, c = 2: C(2,2)/C(4,2) = 1/6 of the pairs hold no correct sample, 1/6 two correct ones
    assert sampled.pass_at_k([4], [2], 2)[0] == pytest.approx(5 / 6)
    assert sampled.pass_hat_k([4], [2], 2)[0] == pytest.approx(1 / 6)
    assert sampled.pass_at_k([4], [2], 1)[0] == pytest.approx(0.5)
    assert sampled.avg_at_n([4, 5], [1, 5]).tolist() == [0.25, 1.0]
    # G-Pass@4_0.5 of n = 6, c = 3: P(X ≥ 2), X ~ Hypergeometric(6, 3, 4) = (C(3,2)C(3,2) + C(3,3)C(3,1)) / C(6,4) = 12/15
    assert sampled.g_pass_at_k([6], [3], 4, 0.5)[0] == pytest.approx(12 / 15)
    # mG-Pass@4 = (2/4) (P(X ≥ 3) + P(X ≥ 4)) = (1/2)(3/15 + 0)
    assert sampled.mg_pass_at_k([6], [3], 4)[0] == pytest.approx(0.1)
    # τ = 0 is pass@k (lighteval's max(⌈τk⌉, 1))
    assert sampled.g_pass_at_k([6], [3], 4, 0.0)[0] == pytest.approx(sampled.pass_at_k([6], [3], 4)[0])
    # maj@2 of answers 4, 4 (right), 5, 5: both 4s → right, both 5s → wrong, the 4 mixed pairs tie → ½
    assert sampled.maj_at_k([[2, 2]], [[1, 0]], 2)[0] == pytest.approx(0.5)
    assert sampled.maj_at_k([[3, 1]], [[1, 0]], 3)[0] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(30))
def test_counting_estimators_equal_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 10))
    scores = (rng.random(n) < rng.random()).astype(int).tolist()
    c, k = sum(scores), int(rng.integers(1, n + 1))
    tau = float(rng.choice([0.0, 0.25, 0.5, 0.7, 0.75, 1.0]))
    need = max(math.ceil(round(tau * k, 9)), 1)
    assert sampled.pass_at_k([n], [c], k)[0] == pytest.approx(subset_means(scores, k, lambda s: any(s)), abs=1e-12)
    assert sampled.pass_hat_k([n], [c], k)[0] == pytest.approx(subset_means(scores, k, lambda s: all(s)), abs=1e-12)
    assert sampled.g_pass_at_k([n], [c], k, tau)[0] == pytest.approx(
        subset_means(scores, k, lambda s: sum(s) >= need), abs=1e-12)
    mg = subset_means(scores, k, lambda s: sum(sum(s) >= i for i in range(math.ceil(k / 2) + 1, k + 1))) * 2 / k
    assert sampled.mg_pass_at_k([n], [c], k)[0] == pytest.approx(mg, abs=1e-12)


def brute_majority(answers, right, k) -> float:
    def value(subset):
        labels, counts = np.unique(subset, return_counts=True)
        return np.mean([right[label] for label in labels[counts == counts.max()]])
    return subset_means(answers, k, value)


@pytest.mark.parametrize("seed", range(60))
def test_maj_at_k_equals_brute_force_over_subsets(seed):
    rng = np.random.default_rng(100 + seed)
    n = int(rng.integers(1, 11))
    answers = rng.integers(0, int(rng.integers(1, 6)), size=n).tolist()
    labels, counts = np.unique(answers, return_counts=True)
    right = {int(label): float(rng.random() < 0.4) for label in labels}
    k = int(rng.integers(1, n + 1))
    got = sampled.maj_at_k([counts.tolist()], [[right[int(label)] for label in labels]], k)[0]
    assert got == pytest.approx(brute_majority(answers, right, k), abs=1e-12)


def test_maj_at_k_of_many_answers_stays_exact_and_sums_to_one():
    shares = sampled.plurality_shares((1,) * 60 + (5, 30, 40), 50)
    assert sum(shares) == pytest.approx(1.0, abs=1e-12)
    assert shares[-1] > shares[-2] > shares[-3] > shares[0] >= 0


def test_large_n_product_form_equals_exact_ratio():
    n, c, k = 5000, 37, 1000
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert sampled.pass_at_k([n], [c], k)[0] == pytest.approx(exact, abs=1e-12)
    assert sampled.pass_hat_k([n], [4000], 300)[0] == pytest.approx(math.comb(4000, 300) / math.comb(n, 300), rel=1e-12)


def test_vectorised_over_items():
    n, c = np.array([4, 4, 8, 4]), np.array([0, 2, 8, 2])
    values = sampled.pass_at_k(n, c, 3)
    assert values.tolist() == pytest.approx([0.0, 1.0, 1.0, 1.0])
    assert sampled.pass_hat_k(n, c, 2).tolist() == pytest.approx([0, 1 / 6, 1, 1 / 6])


@pytest.mark.parametrize("n, c, k, message", [
    ([4], [2], 5, r"k = 5 is more than the samples per item \(n = 4\)"),
    ([4], [5], 1, "between 0 and its n"),
    ([0], [0], 1, "at least one sample"),
    ([4], [1.5], 1, "whole numbers"),
    ([4], [2], 0, "k must be a whole number"),
    ([4, 4], [1], 1, "one n and one c per item"),
])
def test_bad_counts_are_one_clear_error(n, c, k, message):
    with pytest.raises(SeedscopeError, match=message):
        sampled.pass_at_k(n, c, k)


def test_bad_threshold_and_answers():
    with pytest.raises(SeedscopeError, match="threshold"):
        sampled.g_pass_at_k([4], [2], 2, 1.5)
    with pytest.raises(SeedscopeError, match="k = 3 is more"):
        sampled.maj_at_k([[1, 1]], [[1, 0]], 3)
    with pytest.raises(SeedscopeError, match="count ≥ 1"):
        sampled.maj_at_k([[2, 0]], [[1, 0]], 1)
