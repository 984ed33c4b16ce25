"""Pairwise values at any number of runs: closed forms against pair-by-pair loops, the sample against the exact."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from seedscope.metrics import micro, pairs


def _runs(n_runs: int, n_examples: int, n_classes: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, n_classes, n_examples)
    skill = rng.uniform(0.2, 0.9, n_runs)[:, None]
    predictions = np.where(rng.random((n_runs, n_examples)) < skill, gold, rng.integers(0, n_classes, (n_runs, n_examples)))
    labels = np.where(rng.random(n_examples) < 0.1, -1, gold)  # a tenth unlabelled
    return predictions.astype(np.int8 if n_classes < 100 else np.int32), labels


def _slow_con(a: np.ndarray, b: np.ndarray) -> float:
    return sum(int(x == y) for x, y in zip(a, b)) / len(a)


def _slow_ccon(a, b, labels) -> float:
    kept = [(x, y, r) for x, y, r in zip(a, b, labels) if r >= 0]
    return sum(int(x == y == r) for x, y, r in kept) / len(kept)


@pytest.mark.parametrize("n_classes", [2, 3, micro.DENSE_CLASSES * 20])  # the last: the sorting path
def test_each_runs_agreement_is_its_mean_over_the_other_runs(n_classes):
    predictions, labels = _runs(9, 40, n_classes, seed=n_classes)
    for run in range(9):
        others = [b for b in range(9) if b != run]
        con = np.mean([_slow_con(predictions[run], predictions[b]) for b in others])
        ccon = np.mean([_slow_ccon(predictions[run], predictions[b], labels) for b in others])
        assert pairs.run_con(predictions, n_classes)[run] == pytest.approx(con, abs=1e-12)
        assert pairs.run_ccon(predictions, labels)[run] == pytest.approx(ccon, abs=1e-12)


def test_a_hand_worked_case():
    predictions = np.array([[0, 1, 1, 0], [0, 1, 0, 0], [1, 1, 0, 0]])
    labels = np.array([0, 1, 0, -1])
    # CON: (0,1) 3/4, (0,2) 2/4, (1,2) 3/4; CCON over the 3 labelled: (0,1) 2/3, (0,2) 1/3, (1,2) 2/3
    assert pairs.run_con(predictions, 2).tolist() == pytest.approx([5 / 8, 6 / 8, 5 / 8])
    assert pairs.run_ccon(predictions, labels).tolist() == pytest.approx([1 / 2, 2 / 3, 1 / 2])
    a, b = np.array([0, 0, 1]), np.array([1, 2, 2])
    assert pairs.con_values(predictions, a, b).tolist() == [0.75, 0.5, 0.75]
    assert pairs.ccon_values(predictions, labels, a, b).tolist() == pytest.approx([2 / 3, 1 / 3, 2 / 3])


def test_sampled_pair_values_are_the_matrix_entries():
    predictions, labels = _runs(30, 70, 3)
    a, b = pairs.sample_pairs(30, 500, seed=4)
    assert np.all(a < b) and a.min() >= 0 and b.max() < 30
    assert np.array_equal(pairs.con_values(predictions, a, b), micro.con_matrix(predictions, 3)[a, b])
    assert np.array_equal(pairs.ccon_values(predictions, labels, a, b), micro.ccon_matrix(predictions, labels)[a, b])
    probabilities = np.random.default_rng(1).dirichlet(np.ones(3), (30, 70))
    expected = micro.probabilistic_matrix(probabilities)[a, b]
    assert pairs.probabilistic_values(probabilities, a, b) == pytest.approx(expected, abs=1e-12)
    values = np.random.default_rng(2).normal(size=(30, 70))
    assert pairs.pearson_values(values, a, b) == pytest.approx(np.corrcoef(values)[a, b], abs=1e-12)


def test_the_pair_sample_is_uniform_over_unordered_pairs_and_seeded():
    a, b = pairs.sample_pairs(5, 100_000, seed=0)
    counts = np.bincount(a * 5 + b, minlength=25).reshape(5, 5)
    upper = counts[np.triu_indices(5, 1)]
    assert counts.sum() == upper.sum() and np.all(np.abs(upper / 100_000 - 0.1) < 0.005)
    assert all(np.array_equal(x, y) for x, y in zip(pairs.sample_pairs(5, 50, 3), pairs.sample_pairs(5, 50, 3)))
    assert not np.array_equal(pairs.sample_pairs(5, 50, 3)[0], pairs.sample_pairs(5, 50, 4)[0])


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_regression_closed_forms_and_a_constant_run():
    values = np.random.default_rng(3).normal(size=(12, 25))
    matrix = np.corrcoef(values)
    assert pairs.mean_pearson(values) == pytest.approx(micro.pair_values(matrix).mean(), abs=1e-12)
    slow = [np.mean([matrix[a, b] for b in range(12) if b != a]) for a in range(12)]
    assert pairs.run_pearson(values) == pytest.approx(slow, abs=1e-12)
    values[4] = 2.0  # constant: no correlation with any run, and the others' means leave it out
    means = pairs.run_pearson(values)
    assert np.isnan(means[4]) and np.isnan(pairs.mean_pearson(values))
    with np.errstate(invalid="ignore", divide="ignore"):
        matrix = np.corrcoef(values)
    slow = [np.nanmean([matrix[a, b] for b in range(12) if b != a]) for a in range(12) if a != 4]
    assert np.delete(means, 4) == pytest.approx(slow, abs=1e-12)


def test_the_sampled_spread_lies_within_its_stated_error_of_the_exact_one():
    """At 400 runs (the exact matrix fits): over many seeds the estimate is unbiased and its SE honest."""
    predictions, labels = _runs(400, 50, 2, seed=9)
    exact_con = micro.pair_values(micro.con_matrix(predictions, 2)).std()
    exact_ccon = micro.pair_values(micro.ccon_matrix(predictions, labels)).std()
    scores = []
    for seed in range(30):
        a, b = pairs.sample_pairs(400, pairs.PAIR_SAMPLE, seed)
        for values, exact in ((pairs.con_values(predictions, a, b), exact_con),
                              (pairs.ccon_values(predictions, labels, a, b), exact_ccon)):
            spread = pairs.sampled_spread(values)
            assert spread.n_pairs == pairs.PAIR_SAMPLE and 0 < spread.se < exact / 50
            assert abs(spread.std - exact) < 4 * spread.se
            scores.append((spread.std - exact) / spread.se)
    scores = np.array(scores)
    assert abs(scores.mean()) < 0.5 and 0.6 < scores.std() < 1.5  # z-scores: about standard normal


def test_the_sampled_spread_of_equal_values_and_of_undefined_ones():
    assert pairs.sampled_spread(np.full(100, 0.7)) == (0.0, 0.0, 100)
    spread = pairs.sampled_spread(np.array([0.1, np.nan, 0.3]))
    assert np.isnan(spread.std) and np.isnan(spread.se)


def test_pair_quantiles():
    quantiles = pairs.pair_quantiles(np.array([np.nan, *np.linspace(0, 1, 101)]))
    assert quantiles == pytest.approx({"min": 0, "q05": 0.05, "q25": 0.25, "median": 0.5, "q75": 0.75, "q95": 0.95,
                                       "max": 1})
    assert all(np.isnan(v) for v in pairs.pair_quantiles(np.array([np.nan])).values())


def test_pairs_are_computed_in_bounded_chunks(monkeypatch):
    predictions, labels = _runs(20, 30, 3)
    a, b = zip(*itertools.combinations(range(20), 2))
    a, b = np.array(a), np.array(b)
    whole = pairs.con_values(predictions, a, b)
    monkeypatch.setattr(pairs, "PAIR_CHUNK", 31)  # one pair at a time
    assert np.array_equal(pairs.con_values(predictions, a, b), whole)
    assert np.array_equal(whole, micro.pair_values(micro.con_matrix(predictions, 3)))
