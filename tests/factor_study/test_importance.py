"""Factor importance: the specification's worked examples, a slow reference on random cases, real scores."""

from __future__ import annotations

import statistics

import numpy as np
import pytest

from seedscope.io import read_score_table
from seedscope.factor_study.scores import study_from_table
from seedscope.factor_study.importance import (
    FactorGrid,
    FactorStudy,
    analyze_factors,
    baselines,
    bootstrap_importance,
    group_stats,
)
from seedscope.errors import SeedscopeError

S = [[80, 82, 84], [75, 79, 77], [85, 85, 88], [70, 74, 78]]
GM = [78, 82, 75, 88, 71, 80, 84, 77, 73, 86, 79, 81]
S2 = [[70, 80, 90], [72, 79, 91], [69, 82, 88], [71, 78, 92]]
GM2 = [75, 85, 90, 70, 80, 88, 72, 79, 83, 91, 69, 77]


def study(scores, golden=GM, chance=None) -> FactorStudy:
    return FactorStudy({"f": FactorGrid("f", np.array(scores, dtype=float))}, golden, chance=chance)


def test_worked_example_every_number():
    result = analyze_factors(study(S), n_boot=200)
    row = result.summary.loc["f"]
    groups = result.groups
    assert groups["partial_mean"].tolist() == pytest.approx([82, 77, 86, 74])
    assert groups["partial_std"].tolist() == pytest.approx([1.632993, 1.632993, 1.414214, 3.265986], abs=1e-6)
    assert row["c_std"] == pytest.approx(1.986547, abs=1e-6)
    assert row["m_std"] == pytest.approx(4.602988, abs=1e-6)
    assert row["golden_std"] == pytest.approx(4.890467, abs=1e-6)
    assert row["importance"] == pytest.approx(-0.535009, abs=1e-6)
    assert row["mean"] == pytest.approx(79.75)
    assert row["std"] == pytest.approx(5.068284, abs=1e-6)
    assert row["importance_all_std"] == pytest.approx(-0.516238, abs=1e-6)
    assert (row["n_runs"], row["n_groups"], row["n_configs"], row["n_missing"]) == (12, 4, 3, 0)
    assert result.golden["mean"] == pytest.approx(np.mean(GM))
    assert (result.golden["min"], result.golden["max"]) == (71, 88)


def test_dominant_factor():
    row = analyze_factors(study(S2, GM2), n_boot=200).summary.loc["f"]
    assert row["c_std"] == pytest.approx(8.167872, abs=1e-6)
    assert row["m_std"] == pytest.approx(0.372678, abs=1e-6)
    assert row["golden_std"] == pytest.approx(7.296784, abs=1e-6)
    assert row["importance"] == pytest.approx(1.068305, abs=1e-6)


def test_ragged_example_uses_present_runs_and_reports_them():
    ragged = np.array(S, dtype=float)
    ragged[3, 2] = np.nan
    row = analyze_factors(study(ragged), n_boot=200, allow_missing=True).summary.loc["f"]
    assert row["c_std"] == pytest.approx(1.670050, abs=1e-6)
    assert row["m_std"] == pytest.approx(5.261891, abs=1e-6)
    assert row["importance"] == pytest.approx(-0.734458, abs=1e-6)
    assert (row["n_runs"], row["n_missing"]) == (11, 1)


def test_missing_runs_are_refused_unless_allowed():
    ragged = np.array(S, dtype=float)
    ragged[3, 2] = np.nan
    with pytest.raises(SeedscopeError, match="1 missing run.*mitigation run 4, investigation run 3"):
        analyze_factors(study(ragged))


def test_group_with_one_run_is_refused_or_skipped_and_counted():
    small = np.array(S, dtype=float)
    small[1, 1:] = np.nan
    with pytest.raises(SeedscopeError, match="mitigation run 2 has 1 run"):
        analyze_factors(study(small), allow_missing=True)
    result = analyze_factors(study(small), n_boot=100, allow_missing=True, allow_small_groups=True)
    row = result.summary.loc["f"]
    kept = np.array(S, dtype=float)[[0, 2, 3]]
    assert row["c_std"] == pytest.approx(kept.std(axis=1).mean())
    assert row["m_std"] == pytest.approx(kept.mean(axis=1).std())
    assert (row["n_groups"], row["n_groups_skipped"], row["n_runs_skipped"], row["n_runs"]) == (3, 1, 1, 9)
    assert result.groups["used"].tolist() == [True, False, True, True]


@pytest.mark.parametrize(
    "scores, golden, message",
    [
        ([[1, 2, 3]], GM, r"1 mitigation run\(s\); at least 2 \(M ≥ 2\)"),
        ([[1], [2]], GM, r"1 investigation run\(s\); at least 2 \(N ≥ 2\)"),
        (S, [80], "golden model needs at least 2 runs"),
        (S, [80, 80, 80], "same score"),
        (S, [80, np.nan], "golden-model scores contain NaN"),
    ],
)
def test_too_small_studies_are_refused(scores, golden, message):
    with pytest.raises(SeedscopeError, match=message):
        analyze_factors(study(scores, golden))


def test_unknown_factor_is_refused():
    with pytest.raises(SeedscopeError, match="unknown factor 'order'; this study has 'f'"):
        analyze_factors(study(S), factors=["order"])


def test_failed_runs_are_counted_never_dropped():
    result = analyze_factors(study(S, chance=76), n_boot=100)
    row = result.summary.loc["f"]
    assert (row["failed_count"], row["failed_share"]) == (3, 0.25)  # 75, 70, 74
    assert row["n_runs"] == 12 and row["mean"] == pytest.approx(79.75)
    assert result.golden["failed_count"] == 3  # 75, 71, 73
    assert analyze_factors(study(S), n_boot=100).summary.loc["f", "failed_count"] is None


def test_baselines_by_hand():
    p = np.array([1.0, 2.0, 3.0, 4.0])
    golden = np.array(GM, dtype=float)
    out = baselines(p, golden, n_configs=3)
    slices = [statistics.pstdev(GM[i : i + 3]) for i in range(0, 12, 3)]
    threshold = 0.5 * statistics.pstdev(GM)
    assert out["threshold"] == pytest.approx(threshold)
    assert out["random_std"] == pytest.approx(statistics.mean(slices))
    assert out["random_slices"] == 4
    assert out["random_important_share"] == pytest.approx(sum(s >= threshold for s in slices) / 4)
    assert out["random_important"] == (statistics.mean(slices) >= threshold)
    assert (out["fixed_std_min"], out["fixed_std_median"], out["fixed_std_max"]) == (1.0, 2.5, 4.0)
    assert out["fixed_important_share"] == pytest.approx(np.mean(p >= threshold))


def test_bootstrap_interval_is_reproducible_and_brackets_the_estimate():
    grid = np.random.default_rng(3).normal(0.8, 0.02, size=(30, 10))
    stats = group_stats(grid)
    first = bootstrap_importance(stats.partial_mean, stats.partial_std, 0.03, n_boot=2000, seed=5)
    again = bootstrap_importance(stats.partial_mean, stats.partial_std, 0.03, n_boot=2000, seed=5)
    other = bootstrap_importance(stats.partial_mean, stats.partial_std, 0.03, n_boot=2000, seed=6)
    estimate = (stats.partial_std.mean() - stats.partial_mean.std()) / 0.03
    assert first == again != other
    assert first[0] < estimate < first[1]


def test_bootstrap_matches_a_loop_over_resamples():
    rng = np.random.default_rng(11)
    mean, std = rng.normal(0.8, 0.01, 12), rng.uniform(0.001, 0.02, 12)
    low, high = bootstrap_importance(mean, std, 0.02, n_boot=500, confidence=0.9, seed=2)
    index = np.random.default_rng(2).integers(0, 12, size=(500, 12))
    values = [
        (statistics.mean(std[i] for i in row) - statistics.pstdev([mean[i] for i in row])) / 0.02 for row in index
    ]
    assert (low, high) == pytest.approx(tuple(np.quantile(values, [0.05, 0.95])))


@pytest.mark.parametrize("bad", [dict(n_boot=0), dict(confidence=1.0)])
def test_bootstrap_settings_are_checked(bad):
    with pytest.raises(SeedscopeError):
        analyze_factors(study(S), **bad)


def slow_importance(rows: list[list[float]], golden: list[float]) -> dict[str, float]:
    """Straight from the formulas, with Python loops; None cells are missing runs."""
    partial_means, partial_stds = [], []
    for row in rows:
        present = [v for v in row if v is not None]
        partial_means.append(sum(present) / len(present))
        partial_stds.append(statistics.pstdev(present))
    c = sum(partial_stds) / len(partial_stds)
    m = statistics.pstdev(partial_means)
    return {"c": c, "m": m, "importance": (c - m) / statistics.pstdev(golden)}


@pytest.mark.parametrize("case", range(25))
def test_against_slow_loop_implementation_on_random_cases(case):
    rng = np.random.default_rng(case)
    m_runs, n_runs = rng.integers(2, 30), rng.integers(2, 12)
    effect = rng.uniform(0, 0.05)
    scores = 0.7 + rng.normal(0, 0.03, (m_runs, 1)) + rng.normal(0, effect, (m_runs, n_runs))
    golden = rng.normal(0.7, 0.04, rng.integers(2, 50))
    rows = scores.tolist()
    if case % 2 and n_runs > 2:  # drop a few runs, leaving at least 2 per group
        for j in rng.choice(m_runs, size=min(3, m_runs), replace=False):
            scores[j, n_runs - 1] = np.nan
            rows[j][n_runs - 1] = None
    result = analyze_factors(study(scores, golden), n_boot=50, allow_missing=True)
    expected = slow_importance(rows, golden.tolist())
    row = result.summary.loc["f"]
    assert row["c_std"] == pytest.approx(expected["c"], rel=1e-9)
    assert row["m_std"] == pytest.approx(expected["m"], rel=1e-9, abs=1e-12)
    assert row["importance"] == pytest.approx(expected["importance"], rel=1e-9, abs=1e-12)
    curve = result.convergence[result.convergence["axis"] == "M"]
    for size in (2, m_runs):
        prefix = slow_importance(rows[:size], golden.tolist())
        got = curve[curve["size"] == size].iloc[0]
        assert got["c_std"] == pytest.approx(prefix["c"], rel=1e-9)
        assert got["m_std"] == pytest.approx(prefix["m"], rel=1e-7, abs=1e-12)
    by_n = result.convergence[result.convergence["axis"] == "N"]
    two = slow_importance([[v for v in r[:2]] for r in rows], golden.tolist())
    assert by_n.iloc[0]["importance"] == pytest.approx(two["importance"], rel=1e-9, abs=1e-12)


def test_convergence_ends_at_the_full_estimate():
    result = analyze_factors(study(S), n_boot=10)
    curve = result.convergence
    assert curve["axis"].tolist() == ["M", "M", "M", "N", "N"]
    assert curve["size"].tolist() == [2, 3, 4, 2, 3]
    full = result.summary.loc["f", "importance"]
    assert curve.iloc[2]["importance"] == pytest.approx(full)
    assert curve.iloc[4]["importance"] == pytest.approx(full)
    first_two = np.array(S[:2], dtype=float)
    assert curve.iloc[0]["m_std"] == pytest.approx(first_two.mean(axis=1).std())


def test_to_dict_is_json_ready():
    import json

    payload = analyze_factors(study(S, chance=76), n_boot=20).to_dict()
    text = json.dumps(payload, allow_nan=False)
    entry = json.loads(text)["factors"]["f"]
    for key in ("c_std", "m_std", "golden_std", "importance", "n_runs", "n_groups",
                "importance_ci_low", "importance_ci_high", "failed_share"):
        assert key in entry
    assert isinstance(entry["n_runs"], int) and entry["n_groups"] == 4
    assert [p["size"] for p in entry["convergence"]["M"]] == [2, 3, 4]
    assert len(entry["groups"]) == 4 and entry["baselines"]["random_slices"] == 4


# Expected aggregates from ../shared/data/factor-runs/README.md (×100 for c, m, golden).
EXPECTED = {
    "sst2_bert.csv": ((82.2244, 0.5089), {
        "split": (0.5386, 0.1722, 0.7200, 0), "label": (0.7088, 0.0914, 1.2134, 0),
        "initialisation": (0.2384, 0.5493, -0.6110, 0), "order": (0.2228, 0.5067, -0.5578, 0),
    }),
    "cola_bert.csv": ((56.3815, 3.8469), {
        "split": (3.1706, 1.1329, 0.5297, 57), "label": (3.3824, 1.1848, 0.5713, 60),
        "initialisation": (2.9935, 1.4266, 0.4073, 122), "order": (3.3454, 1.4579, 0.4907, 144),
    }),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_real_scores_reproduce_the_expected_aggregates(data_dir, name):
    table = read_score_table(data_dir / "factor-runs" / name)
    result = analyze_factors(study_from_table(table, chance=0.5), n_boot=1000)
    (golden_mean, golden_std), factors = EXPECTED[name]
    assert round(result.golden["mean"] * 100, 4) == golden_mean
    assert round(result.golden["std"] * 100, 4) == golden_std
    for factor, (c, m, importance, failed) in factors.items():
        row = result.summary.loc[factor]
        assert round(row["c_std"] * 100, 4) == c, factor
        assert round(row["m_std"] * 100, 4) == m, factor
        assert round(row["importance"], 4) == importance, factor
        assert row["failed_count"] == failed, factor
        assert row["importance_ci_low"] < row["importance"] < row["importance_ci_high"]
    assert result.summary["n_groups"].to_dict() == {"split": 100, "label": 100, "initialisation": 200, "order": 200}
