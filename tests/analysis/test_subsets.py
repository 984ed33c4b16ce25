"""Subset seed variance: hand values, the documented subset draw, a slow loop on random cases, bad input."""

from __future__ import annotations

import itertools
import statistics

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from seedscope.analysis.subsets import (
    ADVICE,
    NOT_ROBUST_ADVICE,
    analyze_subsets,
    callable_subset_variance,
    cv_band,
    draw_subsets,
    full_pool_ci,
    paired_pool_tests,
    parse_score,
    score_pool,
    seed_summary,
    size_for_target_cv,
    subset_seeds,
    subset_variance,
    summarize_thetas,
)
from seedscope.analysis.significance import paired_swap_test
from seedscope.errors import SeedscopeError


def long_table(scores: dict[str, np.ndarray], ids=None, column: str = "score") -> pd.DataFrame:
    frames = []
    for name, values in scores.items():
        example_ids = ids if ids is not None else np.arange(len(values))
        frames.append(pd.DataFrame({"system": name, "example_id": example_ids, column: values}))
    return pd.concat(frames, ignore_index=True)


# --------------------------------------------------------------------------- hand values


def test_summary_and_pairs_by_hand():
    theta = pd.DataFrame({"A": [0.5, 0.6, 0.7], "B": [0.4, 0.65, 0.6]}, index=pd.Index([0, 1, 2], name="seed"))
    result = summarize_thetas(theta, score="mean", subset_size=10, pool_size=100)
    a = result.summary.loc["A"]
    assert a["mean"] == pytest.approx(0.6)
    assert a["var_seed"] == pytest.approx(0.01)  # ((−0.1)² + 0 + 0.1²) / (3 − 1)
    assert a["std"] == pytest.approx(0.1)
    assert a["cv"] == pytest.approx(0.1 / 0.6)
    assert a["band"] == "high" and a["advice"] == ADVICE["high"]
    pair = result.pairs.loc[("A", "B")]
    assert list(result.deltas["A − B"]) == pytest.approx([0.1, -0.05, 0.1])
    assert pair["mean_delta"] == pytest.approx(0.05)
    assert (pair["n_positive"], pair["n_negative"], pair["n_zero"]) == (2, 1, 0)
    assert pair["sign_consistency"] == pytest.approx(2 / 3)
    assert not pair["seed_robust"] and pair["advice"] == NOT_ROBUST_ADVICE


def test_robust_pair_and_zero_differences():
    theta = pd.DataFrame({"A": [0.9, 0.8, 0.85], "B": [0.7, 0.75, 0.6], "C": [0.9, 0.8, 0.6]})
    pairs = summarize_thetas(theta, score="mean", subset_size=1, pool_size=3).pairs
    assert pairs.loc[("A", "B"), "seed_robust"] and pairs.loc[("A", "B"), "sign_consistency"] == 1.0
    # A − C = [0, 0, 0.25]: a zero difference is not a consistent sign
    assert pairs.loc[("A", "C"), "n_zero"] == 2
    assert pairs.loc[("A", "C"), "sign_consistency"] == pytest.approx(1 / 3)
    assert not pairs.loc[("A", "C"), "seed_robust"]


@pytest.mark.parametrize(
    ("cv", "band"),
    [(0.0, "negligible"), (0.0199, "negligible"), (0.02, "moderate"), (0.08, "moderate"), (0.0801, "high"), (float("nan"), "undefined")],
)
def test_band_edges(cv, band):
    assert cv_band(cv) == band


def test_cv_undefined_when_mean_is_zero_and_zero_when_constant():
    summary = seed_summary(pd.DataFrame({"zero_mean": [-1.0, 1.0], "constant": [0.5, 0.5]}))
    assert np.isnan(summary.loc["zero_mean", "cv"]) and summary.loc["zero_mean", "band"] == "undefined"
    assert summary.loc["constant", "cv"] == 0.0 and summary.loc["constant", "band"] == "negligible"


def test_subset_k_is_the_documented_draw():
    seeds = subset_seeds(5, seed=7)
    assert list(seeds) == [7, 8, 9, 10, 11]
    subsets = draw_subsets(50, 10, seeds)
    for k, s in enumerate(seeds):
        assert list(subsets[k]) == list(np.random.default_rng(s).choice(50, 10, replace=False))
    assert all(len(set(row)) == 10 for row in subsets)  # without replacement


def test_same_subset_for_every_system_and_pool_sorted_as_text():
    ids = ["b", "a", "c", "d"]
    table = long_table({"A": np.array([1.0, 2.0, 3.0, 4.0]), "B": np.array([10.0, 20.0, 30.0, 40.0])}, ids=ids)
    result = subset_variance(table, subset_size=1, n_seeds=6, seed=0)
    # B is A × 10 on every example, so on one shared subset θ_B = 10 θ_A exactly
    assert np.allclose(result.theta["B"], 10 * result.theta["A"])
    pool = {"a": 2.0, "b": 1.0, "c": 3.0, "d": 4.0}  # sorted ids a, b, c, d
    for s, theta in result.theta["A"].items():
        position = np.random.default_rng(s).choice(4, 1, replace=False)[0]
        assert theta == pool["abcd"[position]]


def test_full_subset_has_no_seed_variance():
    rng = np.random.default_rng(3)
    table = long_table({"A": rng.random(30)})
    result = subset_variance(table, subset_size=30, n_seeds=4)
    assert np.allclose(result.theta["A"], table["score"].mean())
    assert result.summary.loc["A", "std"] == pytest.approx(0, abs=1e-12)


def test_accuracy_and_ratio_scores_by_hand():
    table = pd.DataFrame(
        {"system": "A", "example_id": [0, 1, 2, 3], "prediction": ["x", "y", "x", "x"], "label": ["x", "x", "x", "y"]}
    )
    pool = score_pool(table, "accuracy")
    assert pool.values[0, :, 0].tolist() == [1.0, 0.0, 1.0, 0.0]
    numeric = pd.DataFrame({"system": "A", "example_id": [0, 1, 2], "prediction": [1, 0, 2], "label": [1.0, 1.0, 2.0]})
    assert score_pool(numeric, "accuracy").values[0, :, 0].tolist() == [1.0, 0.0, 1.0]  # 1 equals 1.0
    ratio = pd.DataFrame({"system": "A", "example_id": [0, 1], "circuit": [0.5, 0.7], "empty": [0.1, 0.1], "model": [0.9, 1.1]})
    result = subset_variance(ratio, subset_size=2, n_seeds=2, score="ratio:circuit,empty,model")
    # (0.6 − 0.1) / (1.0 − 0.1)
    assert result.theta["A"].tolist() == pytest.approx([0.5 / 0.9, 0.5 / 0.9])
    assert parse_score("ratio:circuit,empty,model").text == "ratio:circuit,empty,model"
    assert parse_score("mean").columns == ("score",)


# --------------------------------------------------------------------------- slow loop on random cases


def slow_thetas(values: dict[str, list[list[float]]], kind: str, n_pool: int, size: int, seeds) -> dict[str, list[float]]:
    """θ by the definition: Python loops over seeds, systems and examples (ids 0…N−1, pool sorted as text)."""
    pool = sorted(str(i) for i in range(n_pool))
    out = {name: [] for name in values}
    for s in seeds:
        subset = [int(pool[i]) for i in np.random.default_rng(int(s)).choice(n_pool, size, replace=False)]
        for name, columns in values.items():
            means = [sum(column[i] for i in subset) / size for column in columns]
            out[name].append(means[0] if kind != "ratio" else (means[0] - means[1]) / (means[2] - means[1]))
    return out


@pytest.mark.parametrize("case", range(6))
def test_vectorised_path_matches_slow_loop(case):
    rng = np.random.default_rng(100 + case)
    n_systems, n_pool = int(rng.integers(1, 5)), int(rng.integers(5, 60))
    size, n_seeds = int(rng.integers(1, n_pool + 1)), int(rng.integers(2, 9))
    kind = ["mean", "ratio"][case % 2]
    columns = ("circuit", "empty", "model") if kind == "ratio" else ("score",)
    values = {}
    frames = []
    for m in range(n_systems):
        cols = [rng.random(n_pool).tolist() for _ in columns]
        if kind == "ratio":
            cols[2] = [v + 2.0 for v in cols[2]]  # keep the denominator away from 0
        values[f"S{m}"] = cols
        frames.append(pd.DataFrame({"system": f"S{m}", "example_id": np.arange(n_pool), **dict(zip(columns, cols))}))
    spec = "ratio:circuit,empty,model" if kind == "ratio" else "mean"
    result = subset_variance(pd.concat(frames), subset_size=size, n_seeds=n_seeds, seed=case, score=spec)
    expected = slow_thetas(values, kind, n_pool, size, range(case, case + n_seeds))
    for name, thetas in expected.items():
        assert result.theta[name].tolist() == pytest.approx(thetas, rel=1e-10, abs=1e-12)
        row = result.summary.loc[name]
        assert row["mean"] == pytest.approx(statistics.fmean(thetas))
        assert row["var_seed"] == pytest.approx(statistics.variance(thetas), rel=1e-8, abs=1e-15)
    for a, b in itertools.combinations(expected, 2):
        deltas = [x - y for x, y in zip(expected[a], expected[b])]
        positive = sum(d > 0 for d in deltas)
        negative = sum(d < 0 for d in deltas)
        assert result.pairs.loc[(a, b), "sign_consistency"] == pytest.approx(max(positive, negative) / len(deltas))
        assert result.pairs.loc[(a, b), "seed_robust"] == (positive == len(deltas) or negative == len(deltas))


def test_callable_api_matches_vectorised_path():
    rng = np.random.default_rng(5)
    ids = [f"q{i}" for i in range(40)]
    scores = {"A": dict(zip(ids, rng.random(40))), "B": dict(zip(ids, rng.random(40)))}
    seen = []

    def recording(subset):
        seen.append(subset)
        return float(np.mean([scores["A"][i] for i in subset]))

    scorers = {"A": recording, "B": lambda subset: float(np.mean([scores["B"][i] for i in subset]))}
    by_callable = callable_subset_variance(scorers, ids[::-1], subset_size=8, n_seeds=5, seed=2, progress=False)
    table = pd.concat(
        [pd.DataFrame({"system": n, "example_id": list(t), "score": list(t.values())}) for n, t in scores.items()]
    )
    vectorised = subset_variance(table, subset_size=8, n_seeds=5, seed=2)
    assert np.allclose(by_callable.theta.to_numpy(), vectorised.theta.to_numpy())
    assert by_callable.score == "callable"
    assert len(seen) == 5 and all(len(subset) == 8 and set(subset) <= set(ids) for subset in seen)
    ints = callable_subset_variance(lambda subset: float(sum(subset)), [3, 1, 2], subset_size=1, n_seeds=3, progress=False)
    assert set(ints.theta["system"]) <= {1.0, 2.0, 3.0}  # the callable gets the caller's own ids


# --------------------------------------------------------------------------- full pool: CI and paired test


def test_full_pool_ci_is_reproducible_and_covers_the_score():
    rng = np.random.default_rng(0)
    pool = score_pool(long_table({"A": rng.random(200), "B": rng.random(200)}))
    first = full_pool_ci(pool, n_boot=500, seed=11)
    again = full_pool_ci(pool, n_boot=500, seed=11)
    other = full_pool_ci(pool, n_boot=500, seed=12)
    pd.testing.assert_frame_equal(first, again)
    assert not first.equals(other)
    assert (first["ci_low"] < first["score"]).all() and (first["score"] < first["ci_high"]).all()
    assert first.loc["A", "score"] == pytest.approx(pool.values[0, :, 0].mean())


def test_identical_systems_have_zero_difference_and_p_one():
    rng = np.random.default_rng(1)
    values = rng.random(50)
    pool = score_pool(long_table({"A": values, "B": values}))
    tests = paired_pool_tests(pool, n_boot=200, n_permutations=200)
    row = tests.loc[("A", "B")]
    assert row["delta"] == 0 and row["ci_low"] == 0 and row["ci_high"] == 0
    assert row["p_value"] == 1.0


def test_paired_difference_ci_is_paired():
    """B = A + 0.01 on every example: a paired bootstrap gives exactly −0.01; an unpaired one would not."""
    rng = np.random.default_rng(2)
    values = rng.random(100)
    tests = paired_pool_tests(score_pool(long_table({"A": values, "B": values + 0.01})), n_boot=300, n_permutations=300)
    row = tests.loc[("A", "B")]
    assert row["ci_low"] == pytest.approx(-0.01) and row["ci_high"] == pytest.approx(-0.01)
    assert row["p_value"] < 0.01


def slow_swap_p_value(a: np.ndarray, b: np.ndarray) -> float:
    """Exact two-sided p over all 2^N swap patterns, by enumeration."""
    observed = abs(a.mean() - b.mean())
    count = 0
    for pattern in itertools.product([False, True], repeat=len(a)):
        swap = np.array(pattern)
        x, y = np.where(swap, b, a), np.where(swap, a, b)
        count += abs(x.mean() - y.mean()) >= observed - 1e-12
    return count / 2 ** len(a)


@pytest.mark.parametrize("case", range(3))
def test_swap_test_is_exact_permutation_test(case):
    rng = np.random.default_rng(20 + case)
    a, b = rng.random(9), rng.random(9) + 0.1 * case
    p = paired_swap_test(a[:, None], b[:, None], lambda means: means[..., 0], n_permutations=10_000, seed=0)
    assert p == pytest.approx(slow_swap_p_value(a, b))
    scipy_p = stats.permutation_test((a - b,), np.mean, permutation_type="samples", n_resamples=10_000).pvalue
    assert p == pytest.approx(scipy_p)


# --------------------------------------------------------------------------- subset size for a target CV


def test_size_for_target_cv_takes_the_smallest_size_that_stays_below():
    rng = np.random.default_rng(4)
    pool = score_pool(long_table({"A": rng.random(400) + 0.5, "B": rng.random(400) * 0.1 + 1.0}))
    sizes = [5, 10, 20, 50, 100, 200, 400]
    grid, needed = size_for_target_cv(pool, target_cv=0.02, sizes=sizes, n_seeds=10, seed=0)
    assert list(grid.index) == sizes
    assert grid.loc[400].abs().max() < 1e-12  # the whole pool under every seed
    for name in ("A", "B"):
        below = grid[name] < 0.02
        expected = next(s for s in sizes if below.loc[s:].all())
        assert needed.loc[name, "needed_subset_size"] == expected
        # re-running the plain analysis at that size gives that CV
        at_size = subset_variance(pool, subset_size=expected, n_seeds=10, seed=0)
        assert at_size.summary.loc[name, "cv"] == pytest.approx(grid.loc[expected, name])
    assert needed.loc["B", "needed_subset_size"] < needed.loc["A", "needed_subset_size"]


def test_analyze_subsets_collects_everything_and_is_reproducible():
    rng = np.random.default_rng(6)
    table = long_table({"A": rng.random(120), "B": rng.random(120) + 0.2, "C": rng.random(120)})
    kwargs = dict(subset_size=30, n_seeds=8, seed=3, target_cv=0.05, n_boot=200, n_permutations=200)
    first, again = analyze_subsets(table, **kwargs), analyze_subsets(table, **kwargs)
    assert first.to_dict() == again.to_dict()
    document = first.to_dict()
    assert set(document["systems"]) == {"A", "B", "C"}
    assert len(document["pairs"]) == 3 and len(document["pairs"][0]["deltas"]) == 8
    assert {"scores", "mean", "var_seed", "std", "cv", "band", "full_pool", "needed_subset_size"} <= set(document["systems"]["A"])


# --------------------------------------------------------------------------- bad input


def test_bad_input_is_a_clear_error():
    good = long_table({"A": np.arange(5.0) + 1})
    with pytest.raises(SeedscopeError, match="larger than the pool of 5"):
        subset_variance(good, subset_size=6)
    with pytest.raises(SeedscopeError, match="at least 2 subset seeds"):
        subset_variance(good, subset_size=2, n_seeds=1)
    with pytest.raises(SeedscopeError, match="at least 2 subset seeds"):
        subset_variance(good, subset_size=2, seeds=[4])
    different = pd.concat([good, long_table({"B": np.ones(5)}, ids=[0, 1, 2, 3, 9])])
    with pytest.raises(SeedscopeError, match="different example ids: B vs A: B lacks 1 .*adds 1"):
        subset_variance(different, subset_size=2)
    with pytest.raises(SeedscopeError, match="NaN"):
        subset_variance(long_table({"A": np.array([0.1, np.nan, 0.3])}), subset_size=2)
    with pytest.raises(SeedscopeError, match="more than once"):
        subset_variance(pd.concat([good, good]), subset_size=2)
    with pytest.raises(SeedscopeError, match="needs column"):
        subset_variance(good, subset_size=2, score="mean:missing")
    with pytest.raises(SeedscopeError, match="unknown score"):
        parse_score("median")
    zero = pd.DataFrame({"system": "A", "example_id": [0, 1], "c": [0.2, 0.3], "e": [0.1, 0.1], "m": [0.1, 0.1]})
    with pytest.raises(SeedscopeError, match="denominator is zero"):
        subset_variance(zero, subset_size=1, score="ratio:c,e,m")
    with pytest.raises(SeedscopeError, match="score of system"):
        callable_subset_variance(lambda ids: float("nan"), ["a", "b"], subset_size=1, n_seeds=2, progress=False)


def test_a_zero_mean_has_no_cv_and_identical_systems_tie():
    """An all-zero score is 'undefined', not 'negligible'; two identical systems tie, nothing 'flips'."""
    from seedscope.analysis.subsets.variance import TIED_ADVICE

    theta = pd.DataFrame({"zero": [0.0, 0.0, 0.0], "a": [0.5, 0.6, 0.55], "a_again": [0.5, 0.6, 0.55]})
    summary = seed_summary(theta)
    assert np.isnan(summary.loc["zero", "cv"]) and summary.loc["zero", "band"] == "undefined"
    pairs = summarize_thetas(theta, score="mean", subset_size=5, pool_size=10).pairs
    tie = pairs.loc[("a", "a_again")]
    assert np.isnan(tie["sign_consistency"]) and not tie["seed_robust"] and tie["advice"] == TIED_ADVICE
    assert pairs.loc[("zero", "a"), "sign_consistency"] == 1.0


def test_pair_tests_are_adjusted_for_several_pairs():
    from seedscope.analysis.significance import adjust_p_values

    rng = np.random.default_rng(3)
    table = pd.concat([pd.DataFrame({"system": name, "example_id": range(40), "score": rng.random(40) + shift})
                       for name, shift in (("a", 0.0), ("b", 0.1), ("c", 0.3))])
    tests = analyze_subsets(table, subset_size=10, n_seeds=5, n_boot=50, n_permutations=99).pair_tests
    assert len(tests) == 3
    np.testing.assert_allclose(tests["p_holm"], adjust_p_values(tests["p_value"], "holm"))
    np.testing.assert_allclose(tests["p_bonferroni"], np.minimum(1, 3 * tests["p_value"]))


def test_large_pools_draw_the_resampled_means_from_their_exact_moments(monkeypatch):
    """From LARGE_N examples on, the full-pool interval, the paired interval and the swap test draw column means
    from their exact moments: the same numbers as resampling every example, to Monte Carlo precision."""
    from seedscope.analysis import significance
    from seedscope.analysis.subsets import pool as pool_module

    rng = np.random.default_rng(5)
    ease = rng.beta(3, 1.5, 12_000)
    a = (rng.random(12_000) < ease).astype(float)
    b = (rng.random(12_000) < np.clip(ease - 0.015, 0, 1)).astype(float)
    pool = score_pool(long_table({"A": a, "B": b}))
    fast_ci, fast_tests = full_pool_ci(pool, n_boot=3000, seed=2), paired_pool_tests(pool, n_boot=3000, n_permutations=3000)
    for module in (pool_module, significance):
        monkeypatch.setattr(module, "LARGE_N", 10**9)
    exact_ci, exact_tests = full_pool_ci(pool, n_boot=3000, seed=2), paired_pool_tests(pool, n_boot=3000, n_permutations=3000)
    width = (exact_ci["ci_high"] - exact_ci["ci_low"]).to_numpy()
    np.testing.assert_allclose(fast_ci[["ci_low", "ci_high"]].to_numpy(), exact_ci[["ci_low", "ci_high"]].to_numpy(),
                               atol=0.08 * width.max())
    pair_width = float(exact_tests["ci_high"].iloc[0] - exact_tests["ci_low"].iloc[0])
    assert fast_tests["ci_low"].iloc[0] == pytest.approx(exact_tests["ci_low"].iloc[0], abs=0.08 * pair_width)
    assert fast_tests["ci_high"].iloc[0] == pytest.approx(exact_tests["ci_high"].iloc[0], abs=0.08 * pair_width)
    assert fast_tests["p_value"].iloc[0] == pytest.approx(exact_tests["p_value"].iloc[0], abs=0.03)
