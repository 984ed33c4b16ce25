"""p-value adjustment (stat-checks §2) and McNemar (§4): reference values and the sequential procedure."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from seedscope.analysis.significance import adjust_p_values, bonferroni, holm, mcnemar, paired_permutation_test
from seedscope.errors import SeedscopeError

# stat-checks §2 inputs
A5 = [0.80, 0.82, 0.85, 0.79, 0.84]
B5 = [0.78, 0.83, 0.80, 0.77, 0.81]


# --------------------------------------------------------------------------- §2 multiple comparisons


def test_holm_against_reference_and_not_deepsig_order():
    # stat-checks lists the step-down values before the running maximum; ours adds the maximum
    reference = {
        (0.01, 0.04, 0.03): [0.03, 0.04, 0.06],
        (0.04, 0.01, 0.03): [0.04, 0.03, 0.06],
        (0.2, 0.01, 0.03, 0.04): [0.2, 0.04, 0.09, 0.08],
    }
    deepsig = {(0.04, 0.01, 0.03): [0.06, 0.04, 0.03], (0.2, 0.01, 0.03, 0.04): [0.09, 0.08, 0.2, 0.04]}
    for p, stepped in reference.items():
        order = np.argsort(p)
        expected = np.empty(len(p))
        expected[order] = np.maximum.accumulate(np.array(stepped)[order])
        assert holm(p) == pytest.approx(expected)
        if p in deepsig:
            assert not np.allclose(holm(p), deepsig[p])
    assert holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert bonferroni([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.12, 0.09])
    assert bonferroni([0.2, 0.01, 0.03, 0.04]) == pytest.approx([0.8, 0.04, 0.12, 0.16])
    assert bonferroni([0.5, 0.6]) == pytest.approx([1.0, 1.0])


def sequential_holm_rejections(p, alpha):
    """Holm's procedure as a loop: reject the sorted p_(i) while p_(i) ≤ α/(m − i + 1)."""
    rejected = set()
    for rank, index in enumerate(np.argsort(p, kind="stable")):
        if p[index] > alpha / (len(p) - rank):
            break
        rejected.add(int(index))
    return rejected


@pytest.mark.parametrize("case", range(20))
def test_holm_decisions_match_the_sequential_procedure(case):
    rng = np.random.default_rng(case)
    p = rng.random(int(rng.integers(1, 10))) ** 3
    adjusted = holm(p)
    for alpha in (0.01, 0.05, 0.1):
        assert {int(i) for i in np.flatnonzero(adjusted <= alpha)} == sequential_holm_rejections(p, alpha)
    assert (adjusted >= p).all() and (adjusted <= 1).all()
    assert adjust_p_values(p, "bh") == pytest.approx(stats.false_discovery_control(p))


def test_bad_p_values_and_method():
    with pytest.raises(SeedscopeError, match=r"\[0, 1\]"):
        holm([0.2, 1.5])
    with pytest.raises(SeedscopeError, match="unknown p-value adjustment"):
        adjust_p_values([0.1], "fdr")


# --------------------------------------------------------------------------- §4 McNemar


def test_mcnemar_reference_and_no_division_by_zero():
    refs = np.array([1, 0, 1])
    right_1, right_2 = np.array([1, 1, 1]) == refs, np.array([1, 0, 1]) == refs
    chi2 = mcnemar(right_1, right_2, exact=False)
    assert (chi2["b"], chi2["c"]) == (0, 1)
    assert chi2["statistic"] == 1.0 and chi2["p_value"] == pytest.approx(0.31731050786291115, abs=1e-15)
    assert mcnemar(right_1, right_2)["method"] == "exact binomial"  # 1 discordant pair < 25
    assert mcnemar(right_1, right_2)["p_value"] == 1.0
    none = mcnemar(right_1, right_1)
    assert none["statistic"] == 0.0 and none["p_value"] == 1.0


def test_mcnemar_exact_by_hand_and_chi_square_when_many():
    a = np.array([True] * 8 + [False] * 2)
    b = np.array([False] * 8 + [True] * 2)
    exact = mcnemar(a, b)
    # b = 8, c = 2: P = 2 · P(X ≤ 2), X ~ Bin(10, ½) = 2 · 56/1024
    assert exact["p_value"] == pytest.approx(2 * (1 + 10 + 45) / 1024)
    many = mcnemar(np.r_[np.ones(30, bool), np.zeros(10, bool)], np.r_[np.zeros(30, bool), np.ones(10, bool)])
    assert many["method"] == "chi-square" and many["statistic"] == pytest.approx(400 / 40)


def test_paired_permutation_test_is_exact_for_few_seeds():
    a, b = np.array(A5), np.array(B5)
    d = a - b
    flips = [np.array(signs) * d for signs in itertools.product([1, -1], repeat=5)]
    expected = np.mean([abs(f.mean()) >= abs(d.mean()) - 1e-12 for f in flips])
    assert paired_permutation_test(a, b) == pytest.approx(expected)
    with pytest.raises(SeedscopeError, match="matched seeds"):
        paired_permutation_test(a, b[:4])


@pytest.mark.parametrize("bad", [[1, 0, np.nan], [1, 0, 2]])
def test_mcnemar_refuses_values_that_are_not_correctness(bad):
    with pytest.raises(SeedscopeError, match="McNemar needs per-example correctness as 0/1 or True/False"):
        mcnemar(bad, [1, 1, 0])
    assert mcnemar([1.0, 0.0, 1.0], [True, True, False])["b"] == 1


def test_wilcoxon_matches_the_hf_evaluate_reference_and_scipy():
    from seedscope.analysis.significance import wilcoxon_signed_rank

    found = wilcoxon_signed_rank([-7, 123.45, 43, 4.91, 5], [1337.12, -9.74, 1, 2, 3.21])
    assert found == {"statistic": 5.0, "p_value": pytest.approx(0.625)}
    rng = np.random.default_rng(3)
    for size in (5, 8, 30):
        a, b = rng.normal(0.8, 0.02, size), rng.normal(0.79, 0.02, size)
        expected = stats.wilcoxon(a, b)
        assert wilcoxon_signed_rank(a, b) == {"statistic": expected.statistic, "p_value": pytest.approx(expected.pvalue)}
    assert wilcoxon_signed_rank([0.5, 0.6], [0.5, 0.6]) == {"statistic": 0.0, "p_value": 1.0}
    with pytest.raises(SeedscopeError, match="matched seeds"):
        wilcoxon_signed_rank([0.5, 0.6, 0.7], [0.5, 0.6])


def test_mcnemar_per_seed_is_mcnemar_of_each_row():
    from seedscope.analysis.significance import mcnemar_runs

    rng = np.random.default_rng(4)
    correct_a = rng.random((200, 60)) < 0.7
    correct_b = np.where(rng.random((200, 60)) < 0.95, correct_a, ~correct_a)  # few discordant pairs: exact tests
    correct_b[-5:] = rng.random((5, 60)) < 0.2  # many: χ²
    correct_b[0] = correct_a[0]  # none
    rows = mcnemar_runs(correct_a, correct_b)
    assert rows == [mcnemar(a, b) for a, b in zip(correct_a, correct_b)]
    assert {row["method"] for row in rows} == {"exact binomial", "chi-square", "no discordant pairs"}
    assert mcnemar_runs(correct_a[:0], correct_b[:0]) == []
    with pytest.raises(SeedscopeError, match="runs × examples of the same shape"):
        mcnemar_runs(correct_a, correct_b[:, :5])
