"""Micro metrics: hand-computed cases (incl. the paper's Figure 1) and a slow pair loop."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from seedscope.errors import SeedscopeError
from seedscope.metrics import micro


def pair_loop(pred: np.ndarray, gold: np.ndarray | None):
    """The definition, pair by pair: lists of CON and CCON values over unordered pairs."""
    con, ccon = [], []
    for a, b in itertools.combinations(range(len(pred)), 2):
        con.append(np.mean([x == y for x, y in zip(pred[a], pred[b])]))
        if gold is not None:
            keep = [t for t in range(len(gold)) if gold[t] >= 0]
            ccon.append(np.mean([pred[a][t] == pred[b][t] == gold[t] for t in keep]))
    return con, ccon


def figure1():
    """Two runs at 60 % accuracy on 10 examples that agree on only 2 of them."""
    gold = np.ones(10, dtype=int)
    a = np.array([1] * 6 + [0] * 4)
    b = np.array([0] * 4 + [1] * 6)
    return np.stack([a, b]), gold


def test_figure1_shape():
    pred, gold = figure1()
    assert (pred == gold).mean(axis=1).tolist() == [0.6, 0.6]
    assert micro.mean_con(pred, 2) == pytest.approx(0.2)
    assert micro.mean_ccon(pred, gold) == pytest.approx(0.2)
    assert micro.con_matrix(pred, 2)[0, 1] == pytest.approx(0.2)
    # diagonal of CCON = each run's accuracy
    assert np.diag(micro.ccon_matrix(pred, gold)).tolist() == pytest.approx([0.6, 0.6])


def test_three_class_three_runs_by_hand():
    # example 0: all say 0 (gold 0); 1: 1,1,2 (gold 1); 2: 0,1,2 (gold 2); 3: 2,2,2 (gold 0)
    pred = np.array([[0, 1, 0, 2], [0, 1, 1, 2], [0, 2, 2, 2]])
    gold = np.array([0, 1, 2, 0])
    # pairs (0,1): agree on 0,1,3 → 3/4; (0,2): 0,3 → 2/4; (1,2): 0,3 → 2/4
    assert micro.mean_con(pred, 3) == pytest.approx((3 / 4 + 2 / 4 + 2 / 4) / 3)
    # correct agreement: (0,1): ex 0,1 → 2/4; (0,2): ex 0 → 1/4; (1,2): ex 0 → 1/4
    assert micro.mean_ccon(pred, gold) == pytest.approx((2 / 4 + 1 / 4 + 1 / 4) / 3)
    con = micro.con_matrix(pred, 3)
    assert con[0, 1] == pytest.approx(0.75) and con[1, 2] == pytest.approx(0.5)
    assert micro.pair_values(con).std() == pytest.approx(np.std([0.75, 0.5, 0.5]))
    assert micro.class_counts(pred, 3).tolist() == [[3, 0, 0], [0, 2, 1], [1, 1, 1], [0, 0, 3]]
    assert micro.correct_counts(pred, gold).tolist() == [3, 2, 1, 0]


@pytest.mark.parametrize("n_runs,n_examples,n_classes", [(2, 50, 2), (5, 200, 3), (9, 300, 4), (12, 100, 7)])
def test_closed_form_and_matrices_match_the_pair_loop(n_runs, n_examples, n_classes):
    rng = np.random.default_rng(n_runs * 100 + n_classes)
    gold = rng.integers(0, n_classes, n_examples)
    gold[rng.random(n_examples) < 0.1] = -1  # some unlabelled examples
    pred = np.where(rng.random((n_runs, n_examples)) < 0.7, np.maximum(gold, 0), rng.integers(0, n_classes, (n_runs, n_examples)))
    con, ccon = pair_loop(pred, gold)
    assert micro.mean_con(pred, n_classes) == pytest.approx(np.mean(con), abs=1e-12)
    assert micro.mean_ccon(pred, gold) == pytest.approx(np.mean(ccon), abs=1e-12)
    assert micro.pair_values(micro.con_matrix(pred, n_classes)) == pytest.approx(con, abs=1e-9)
    assert micro.pair_values(micro.ccon_matrix(pred, gold)) == pytest.approx(ccon, abs=1e-9)


def test_matrices_are_chunked_correctly(monkeypatch):
    monkeypatch.setattr(micro, "MATRIX_CHUNK", 7)
    rng = np.random.default_rng(5)
    pred, gold = rng.integers(0, 3, (4, 50)), rng.integers(0, 3, 50)
    con, ccon = pair_loop(pred, gold)
    assert micro.pair_values(micro.con_matrix(pred, 3)) == pytest.approx(con)
    assert micro.pair_values(micro.ccon_matrix(pred, gold)) == pytest.approx(ccon)


def test_matrices_count_bits_the_same_without_numpys_bitwise_count(monkeypatch):
    """numpy before 2.0 has no bitwise_count: the byte table gives the same matrices, and both the pair loop's."""
    rng = np.random.default_rng(11)
    gold = rng.integers(-1, 4, 333)
    pred = np.where(rng.random((6, 333)) < 0.6, np.maximum(gold, 0), rng.integers(0, 4, (6, 333))).astype(np.int8)
    fast = micro.con_matrix(pred, 4), micro.ccon_matrix(pred, gold)
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    table = micro.con_matrix(pred, 4), micro.ccon_matrix(pred, gold)
    con, ccon = pair_loop(pred, gold)
    for one, other, loop in zip(fast, table, (con, ccon)):
        np.testing.assert_array_equal(one, other)
        assert micro.pair_values(one) == pytest.approx(loop, abs=1e-12)


def test_regression_consistency():
    rng = np.random.default_rng(2)
    pred = rng.normal(size=(4, 30))
    con = micro.regression_con_matrix(pred)
    for a, b in itertools.combinations(range(4), 2):
        assert con[a, b] == pytest.approx(stats.pearsonr(pred[a], pred[b])[0])
    ccon = micro.regression_ccon_matrix([0.8, 0.6, 0.9, 0.7])
    assert ccon[0, 1] == pytest.approx(0.7) and ccon[2, 3] == pytest.approx(0.8)


def test_probabilistic_consistency_by_hand_and_against_the_pair_loop():
    # two runs, one example: p^A = (0.7, 0.3), p^B = (0.4, 0.6) → π = 0.4 + 0.3
    p = np.array([[[0.7, 0.3]], [[0.4, 0.6]]])
    assert micro.mean_probabilistic_consistency(p) == pytest.approx(0.7)
    rng = np.random.default_rng(9)
    p = rng.dirichlet(np.ones(3), size=(6, 40))
    loop = [np.minimum(p[a], p[b]).sum(axis=1).mean() for a, b in itertools.combinations(range(6), 2)]
    assert micro.mean_probabilistic_consistency(p) == pytest.approx(np.mean(loop))
    assert micro.pair_values(micro.probabilistic_matrix(p)) == pytest.approx(loop)


def test_one_run_is_refused():
    with pytest.raises(SeedscopeError, match="at least two"):
        micro.mean_con(np.zeros((1, 5), dtype=int), 2)
    with pytest.raises(SeedscopeError, match="at least two"):
        micro.mean_probabilistic_consistency(np.full((1, 5, 2), 0.5))


def test_many_classes_take_the_sorting_path_and_agree_with_the_dense_counts():
    """Free-text answers (thousands of classes) are counted by sorting; the numbers are the dense ones."""
    rng = np.random.default_rng(5)
    n_classes = micro.DENSE_CLASSES * 40
    gold = rng.integers(0, n_classes, 400)
    pred = np.where(rng.random((7, 400)) < 0.5, gold, rng.integers(0, 3, (7, 400)) * 97)
    counts = micro.class_counts(pred, n_classes).astype(np.int64)  # the dense reference, affordable here
    found = micro.example_agreement(pred, n_classes)
    assert found.pair_counts.tolist() == (counts * (counts - 1)).sum(axis=1).tolist()
    assert found.majority.tolist() == counts.argmax(axis=1).tolist()  # ties: the lowest class, as argmax
    assert found.majority_count.tolist() == counts.max(axis=1).tolist()
    assert found.n_distinct.tolist() == (counts > 0).sum(axis=1).tolist()
    slow = [np.mean(pred[a] == pred[b]) for a in range(7) for b in range(a + 1, 7)]
    assert micro.mean_con(pred, n_classes) == pytest.approx(np.mean(slow))
    assert micro.pair_values(micro.con_matrix(pred, n_classes)) == pytest.approx(slow)


@pytest.mark.parametrize("case", range(6))
def test_dense_agreement_is_the_reduction_over_each_examples_class_counts(case):
    """Few classes are counted class by class; the numbers (ties to the lowest class) and their int64 type are those
    of reducing each example's row of class counts."""
    rng = np.random.default_rng(case)
    n_runs, n_classes = int(rng.integers(2, 25)), int(rng.integers(1, micro.DENSE_CLASSES + 1))
    pred = rng.integers(0, n_classes, (n_runs, 500)).astype(np.int8)
    pred[:, :50] = pred[:1, :50]  # examples where every run agrees
    counts = micro.class_counts(pred, n_classes).astype(np.int64)
    found = micro.example_agreement(pred, n_classes)
    expected = ((counts * (counts - 1)).sum(axis=1), counts.argmax(axis=1), counts.max(axis=1), (counts > 0).sum(axis=1))
    for value, reference in zip(found, expected):
        assert value.dtype == np.int64 and value.tolist() == reference.tolist()


def test_example_agreement_by_hand():
    pred = np.array([[0, 1, 0, 2], [0, 1, 1, 2], [0, 2, 2, 2]]) * 100  # codes far apart: the sorting path
    found = micro.example_agreement(pred, micro.DENSE_CLASSES + 300)
    assert found.pair_counts.tolist() == [6, 2, 0, 6]
    assert found.majority.tolist() == [0, 100, 0, 200] and found.majority_count.tolist() == [3, 2, 1, 3]
    assert found.n_distinct.tolist() == [1, 2, 3, 1]
