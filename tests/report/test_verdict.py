"""The verdicts printed before any table, worked by hand on small results; and the one way numbers are shown."""

from __future__ import annotations

import numpy as np
import pandas as pd

import seedscope
from seedscope.analysis.compare import compare_systems
from seedscope.analysis.subsets import analyze_subsets
from seedscope.report import verdict
from seedscope.report.display import format_interval, format_value, header, readable


def _table(runs: dict[str, list[str]], labels: list[str]) -> pd.DataFrame:
    return pd.DataFrame([{"run": run, "example_id": i, "prediction": p, "label": labels[i]}
                         for run, predictions in runs.items() for i, p in enumerate(predictions)])


def test_task_lines_say_how_much_the_metric_moves_and_how_often_seeds_disagree():
    labels = ["a", "b", "a", "b"]
    runs = {"s1": ["a", "b", "a", "a"], "s2": ["b", "b", "b", "b"], "s3": ["a", "a", "a", "b"]}  # 3/4, 2/4, 3/4 right
    lines = verdict.task_lines("toy", seedscope.analyze(_table(runs, labels), n_boot=50))
    accuracy = np.array([0.75, 0.5, 0.75])
    assert lines[0] == (f"toy: accuracy varies by ±{accuracy.std():.4f} across 3 seeds (VAR, the population std; mean "
                        f"{accuracy.mean():.4f}, from 0.5000 to 0.7500); on 4 of 4 examples (1.0000) the seeds disagree.")
    assert "(CON)" in lines[1] and "(CCON)" in lines[1]
    assert "unreliable" not in " ".join(lines)


def test_below_three_runs_the_verdict_says_the_spread_is_unreliable():
    lines = verdict.task_lines("toy", seedscope.analyze(_table({"s1": ["a", "b"], "s2": ["a", "a"]}, ["a", "b"]),
                                                        n_boot=50))
    assert "with 2 runs the spread and every interval are unreliable (they need 3 runs at least)" in lines[0]
    assert verdict.few_runs_text(3) == ""


def _series(values):
    return pd.Series(values, index=[f"s{i}" for i in range(len(values))])


def test_comparison_lines_name_the_winner_and_whether_it_survives_the_seed():
    clear = compare_systems({"A": _series([0.70, 0.71, 0.72, 0.70, 0.71]), "B": _series([0.80, 0.81, 0.82, 0.80, 0.83])},
                            n_boot=500, n_permutations=99)
    line, = verdict.comparison_lines(clear)
    assert line.startswith("B is ahead of A on score by 0.1040 on average (95% interval of B − A over 5 matched seeds: ")
    assert "the interval excludes 0: the order survives the seed." in line
    assert line.endswith("With 5 matched seeds the paired permutation test cannot reach p below 0.0625 (2 of the 2^5 "
                         "sign flips): it needs 6 seeds to reach 0.0500.")
    close = compare_systems({"A": _series([0.70, 0.75, 0.72, 0.78, 0.71]), "B": _series([0.72, 0.71, 0.75, 0.74, 0.73])},
                            n_boot=500, n_permutations=99)
    assert "another set of seeds could reverse the order." in verdict.comparison_lines(close)[0]
    two = compare_systems({"A": _series([0.70, 0.71]), "B": _series([0.80, 0.82])}, n_boot=200, n_permutations=9)
    assert "with 2 runs the spread and every interval are unreliable" in verdict.comparison_lines(two)[0]


def test_subset_lines_say_the_band_the_robustness_and_an_unreachable_target():
    rng = np.random.default_rng(0)
    pool = pd.DataFrame({"system": np.repeat(["A", "B"], 200), "example_id": np.tile(np.arange(200), 2),
                         "score": np.r_[rng.random(200) < 0.5, rng.random(200) < 0.9].astype(float)})
    result = analyze_subsets(pool, subset_size=50, n_seeds=8, target_cv=0.0001, full_pool=False)
    lines = verdict.subset_lines(result)
    row = result.summary.loc["A"]
    assert lines[0] == (f"A: on 8 random subsets of 50 of the 200 examples the score moves by std {row['std']:.4f} "
                        f"around {row['mean']:.4f} (CV {row['cv']:.4f}, {row['band']}).")
    assert lines[2].startswith("B is ahead of A by ") and "on 8 of 8 subset seeds; seed-robust" in lines[2]
    assert lines[3] == ("A: no subset smaller than the pool brings the CV below 0.0001 (unreachable; at n = 200 every "
                        "subset is the whole pool).")


def test_factor_lines_say_which_factor_matters():
    rows = [{"experiment": "golden", "score": 0.8 + 0.01 * np.sin(i)} for i in range(40)]
    rows += [{"experiment": "order", "order": i, "run": g, "score": 0.8 + 0.03 * np.cos(i * 2.1 + g) + 0.001 * g}
             for g in range(1, 11) for i in range(1, 6)]
    rows += [{"experiment": "split", "split": i, "run": g, "score": 0.8 + 0.0005 * i + 0.02 * np.sin(g)}
             for g in range(1, 11) for i in range(1, 6)]
    result = seedscope.analyze_factors(seedscope.study_from_table(pd.DataFrame(rows)), n_boot=500)
    lines = verdict.factor_lines(result)
    assert lines[0] == "The factor that matters most is order."
    order = result.summary.loc["order"]
    assert lines[1].startswith(f"order: IS {order['importance']:.4f} (95% interval {order['importance_ci_low']:.4f}–")
    assert lines[1].endswith("it matters: alone it spreads the score more than all the other factors together.")
    assert lines[2].startswith("split: IS -") and lines[2].endswith("it matters less than the other factors together.")


def test_one_number_format():
    assert format_value(True) == "yes" and format_value(np.bool_(False)) == "no"
    assert format_value(0.123456) == "0.1235" and format_value(np.float32("nan")) == "—"
    assert format_interval(0.722, 0.768) == "0.7220–0.7680" and format_interval(0.7, None) == "—"
    assert header("p_wilcoxon_holm") == "p, Wilcoxon (Holm)" and header("var_published") == "VAR (population SD)"
    assert header("an_unknown_column") == "an_unknown_column"


def test_readable_puts_each_interval_in_one_column_and_headers_in_words():
    frame = pd.DataFrame({"n_runs": [5], "mean": [0.75], "ci_low": [0.7], "ci_high": [0.8], "paired": [True]},
                         index=pd.Index(["A"], name="system"))
    shown = readable(frame)
    assert list(shown.columns) == ["runs", "mean", "CI", "paired"] and shown.index.name == "system"
    assert shown.loc["A", "CI"] == "0.7000–0.8000"
