"""Import of a long score table into factor grids, and every way such a table can be wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.io import read_score_table
from seedscope.factor_study.scores import study_from_table
from seedscope.errors import SeedscopeError


def table(rows, columns=("experiment", "a", "b", "score")) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=list(columns))


GOOD = [
    ("golden", None, None, 0.70), ("golden", None, None, 0.74), ("golden", None, None, 0.80),
    ("a", 1, 1, 0.71), ("a", 2, 1, 0.73), ("a", 1, 2, 0.78), ("a", 2, 2, 0.76),
    ("b", 1, 1, 0.60), ("b", 1, 2, 0.62), ("b", 2, 1, 0.70), ("b", 2, 2, 0.66),
]


def test_grids_follow_the_investigated_and_group_columns():
    study = study_from_table(table(GOOD), chance=0.5)
    a, b = study.grids["a"], study.grids["b"]
    assert a.groups == ({"b": 1}, {"b": 2}) and a.configs == (1, 2)
    np.testing.assert_allclose(a.scores, [[0.71, 0.73], [0.78, 0.76]])
    assert b.groups == ({"a": 1}, {"a": 2})
    np.testing.assert_allclose(b.scores, [[0.60, 0.62], [0.70, 0.66]])
    np.testing.assert_allclose(study.golden, [0.70, 0.74, 0.80])
    assert study.chance == 0.5 and study.metric == "score"


def test_missing_run_becomes_a_nan_cell():
    study = study_from_table(table(GOOD[:-1]))
    assert np.isnan(study.grids["b"].scores[1, 1])


def test_other_metric_column(tmp_path):
    frame = table(GOOD).assign(accuracy=lambda t: t["score"] + 0.1).drop(columns="score")
    path = tmp_path / "scores.parquet"
    frame.to_parquet(path)
    study = study_from_table(read_score_table(path), metric="accuracy")
    assert study.grids["a"].scores[0, 0] == pytest.approx(0.81)


def test_readers_by_suffix(tmp_path):
    frame = table(GOOD)
    frame.to_csv(tmp_path / "s.csv", index=False)
    frame.to_csv(tmp_path / "s.tsv", sep="\t", index=False)
    frame.to_json(tmp_path / "s.jsonl", orient="records", lines=True)
    for name in ("s.csv", "s.tsv", "s.jsonl"):
        assert len(read_score_table(tmp_path / name)) == len(GOOD)
    (tmp_path / "s.xlsx").write_text("x")
    with pytest.raises(SeedscopeError, match="score tables must be"):
        read_score_table(tmp_path / "s.xlsx")
    with pytest.raises(SeedscopeError, match="does not exist"):
        read_score_table(tmp_path / "none.csv")


@pytest.mark.parametrize(
    "frame, message",
    [
        (table([]), "score table is empty"),
        (table(GOOD).drop(columns="score"), "no 'score' column"),
        (table(GOOD).drop(columns="experiment"), "no 'experiment' column"),
        (table([r for r in GOOD if r[0] != "golden"]), "no 'golden' experiment"),
        (table(GOOD + [("c", 1, 1, 0.5)]), "experiment 'c' has no index column of the same name"),
        (table(GOOD + [("a", 3, None, 0.5)]), "experiment 'a' has ragged groups"),
        (table(GOOD + [("a", None, 3, 0.5)]), "empty 'a' index column"),
        (table(GOOD + [("a", 1, 1, 0.5)]), r"two runs with the same indices \(b=1, a=1\)"),
        (table(GOOD + [("a", 1.5, 1, 0.5)]), "column 'a' holds non-integer value 1.5"),
        (table(GOOD + [("a", 3, 1, None)]), "row 12 of the score table has no numeric 'score'"),
        (table(GOOD + [("a", 3, 1, "high")]), "no numeric 'score'"),
    ],
)
def test_bad_tables_are_refused(frame, message):
    with pytest.raises(SeedscopeError, match=message):
        study_from_table(frame)


def test_real_fixture_layout(data_dir):
    study = study_from_table(read_score_table(data_dir / "factor-runs" / "sst2_bert.csv"))
    assert list(study.grids) == ["split", "label", "initialisation", "order"]
    assert study.grids["split"].scores.shape == (100, 10)
    assert study.grids["order"].scores.shape == (200, 10)
    assert set(study.grids["order"].groups[0]) == {"split", "label", "run"}
    assert len(study.golden) == 1000


def study_store(tmp_path, fail=(), skip=(), valueless=()):
    """A real experiment store of the worked example (SST-2, data_order, N = 3, M = 4, L = 12)."""
    from seedscope.factor_study.plan import factor_study_plan, parse_study_tag
    from seedscope.store import ExperimentStore

    S = [[80, 82, 84], [75, 79, 77], [85, 85, 88], [70, 74, 78]]
    GM = [78, 82, 75, 88, 71, 80, 84, 77, 73, 86, 79, 81]
    plan = factor_study_plan("sst2", "tiny", ["data_order"], 3, 4, 12)
    store = ExperimentStore.create(tmp_path / "study", plan.to_dict())
    predictions = pd.DataFrame({"run": 1, "example_id": ["0", "1"], "prediction": [0, 1], "label": [0, 0]})
    for spec in plan.specs:
        if spec.tag in skip:
            continue
        if spec.tag in fail:
            store.record_failure(spec.run_id, "boom")
            continue
        experiment, j, k = parse_study_tag(spec.tag)
        score = GM[j - 1] if k is None else S[j - 1][k - 1]
        accuracy = float("nan") if spec.tag in valueless else score / 100
        store.record_success(spec.run_id, predictions, {"accuracy": accuracy, "f1_macro": 0.5})
    return store


def test_store_becomes_the_same_table(tmp_path):
    from seedscope.store.views import factor_score_table
    from seedscope.factor_study.importance import analyze_factors

    table, info = factor_score_table(study_store(tmp_path))
    assert info == {"task": "sst2", "model": "tiny", "metric": "accuracy", "chance": 0.5, "not_done": {}}
    assert list(table.columns) == ["experiment", "mitigation", "data_order", "accuracy"]
    study = study_from_table(table, metric="accuracy", chance=info["chance"])
    row = analyze_factors(study, n_boot=100).summary.loc["data_order"]
    assert row["importance"] == pytest.approx(-0.535009, abs=1e-6)
    assert study.grids["data_order"].groups == ({"mitigation": 1}, {"mitigation": 2}, {"mitigation": 3}, {"mitigation": 4})


def test_store_runs_not_done_are_counted(tmp_path):
    from seedscope.store.views import factor_score_table
    from seedscope.factor_study.importance import analyze_factors

    store = study_store(tmp_path, fail={"data_order.m4.i3"}, skip={"golden.m12"})
    table, info = factor_score_table(store)
    assert info["not_done"] == {"failed": 1, "pending": 1}
    study = study_from_table(table, metric="accuracy")
    with pytest.raises(SeedscopeError, match="1 missing run"):
        analyze_factors(study)
    row = analyze_factors(study, n_boot=50, allow_missing=True).summary.loc["data_order"]
    assert row["importance"] == pytest.approx((1.670050 - 5.261891) / np.std([78, 82, 75, 88, 71, 80, 84, 77, 73, 86, 79]), abs=1e-6)


def test_store_runs_without_the_metric_are_counted_missing_runs(tmp_path, capsys):
    from seedscope.store.views import factor_score_table
    from seedscope.factor_study.importance import analyze_factors
    from seedscope.cli import main

    store = study_store(tmp_path, valueless={"data_order.m4.i3"})
    main(["factors", "analyze", str(store.path), "--allow-missing", "--n-boot", "50"])
    printed = " ".join(capsys.readouterr().out.split())
    assert "study runs not done (1 done without accuracy)" in printed and "1 missing run(s)" in printed
    table, info = factor_score_table(store)
    assert info["not_done"] == {"done without accuracy": 1}
    assert len(table) == 12 + 11 and table["accuracy"].notna().all()
    study = study_from_table(table, metric="accuracy")
    row = analyze_factors(study, n_boot=50, allow_missing=True).summary.loc["data_order"]
    assert (row["c_std"], row["m_std"]) == (pytest.approx(0.01670050, abs=1e-8), pytest.approx(0.05261891, abs=1e-8))


def test_store_metric_and_errors(tmp_path):
    from seedscope.metrics.macro import chance_level
    from seedscope.store.views import factor_score_table
    from seedscope.store import ExperimentStore

    store = study_store(tmp_path)
    table, info = factor_score_table(store, metric="f1_macro")
    assert (table["f1_macro"] == 0.5).all() and info["chance"] == 0.5
    with pytest.raises(SeedscopeError, match="no done run .* has the metric 'pearson'"):
        factor_score_table(store, metric="pearson")
    plain = ExperimentStore.create(tmp_path / "plain", {"runs": [{"run_id": "a", "task": "sst2", "model": "m",
                                                                   "method": "full", "seeds": {}, "tag": ""}]})
    with pytest.raises(SeedscopeError, match="holds no factor-study runs"):
        factor_score_table(plain)
    assert (chance_level("mcc", 2), chance_level("accuracy", 4), chance_level("accuracy", None)) == (0.0, 0.25, None)


def test_loading_a_study_store_warns_of_runs_not_done(tmp_path):
    """The notes ``factors analyze`` prints are warnings in Python: runs not done are a degenerate-run warning."""
    from seedscope.errors import DegenerateRunWarning, ReadingChoiceWarning
    from seedscope.workflows.factor_studies import load_study

    store = study_store(tmp_path, fail={"data_order.m4.i3"})
    with pytest.warns(DegenerateRunWarning, match=r"study runs not done \(1 failed\)") as shown:
        _, notes = load_study(store.path)
    assert any(w.category is ReadingChoiceWarning and "score = accuracy (fractions)" in str(w.message) for w in shown)
    assert notes == [str(w.message) for w in shown if issubclass(w.category, (DegenerateRunWarning, ReadingChoiceWarning))]


def test_scores_outside_the_bounds_given_are_refused():
    rows = GOOD[:4] + [("a", 2, 1, 1.7)] + GOOD[5:]
    study_from_table(table(rows))  # "score" has no range of its own
    with pytest.raises(SeedscopeError, match=r"score 1.7 is outside \[0, 1\], the range of these scores"):
        study_from_table(table(rows), chance=0.5, bounds=(0.0, 1.0))
