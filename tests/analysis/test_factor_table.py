"""Import of a long score table into factor grids, and every way such a table can be wrong."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.factor_table import read_score_table, study_from_table
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
