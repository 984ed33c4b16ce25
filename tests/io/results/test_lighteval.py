"""lighteval details, read from files lighteval 0.13 itself wrote (tests/io/fixtures/lighteval: 3 runs)."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import detect_format, read_predictions

DETAILS = Path(__file__).resolve().parents[1] / "fixtures" / "lighteval" / "details"
RUNS = [DETAILS / f"seed{seed}" for seed in (1, 2, 3)]


def lighteval_acc(folder: Path) -> float:
    records = pq.read_table(next(folder.glob("*.parquet"))).to_pylist()
    return sum(r["metric"]["acc"] for r in records) / len(records)


def test_each_details_file_is_a_run_and_accuracy_is_lightevals():
    table = read_predictions(RUNS)
    assert detect_format(DETAILS) == "lighteval" and detect_format(next(RUNS[0].glob("*.parquet"))) == "lighteval"
    assert table["run"].unique().tolist() == ["seed1", "seed2", "seed3"] and len(table) == 72
    assert set(table["task"]) == {"sst2_local|2"} and {"prob_0", "prob_1"} <= set(table.columns)
    for folder in RUNS:
        rows = table[table["run"] == folder.name]
        assert (rows["prediction"] == rows["label"]).mean() == pytest.approx(lighteval_acc(folder))
    assert read_predictions(DETAILS)["run"].nunique() == 3  # the whole folder: one run per file


def test_a_named_metric_decides_each_sample():
    table = read_predictions(RUNS[0], metric="acc")
    assert set(table["label"]) == {" negative", " positive"}
    assert (table["prediction"] == table["label"]).mean() == pytest.approx(lighteval_acc(RUNS[0]))
    with pytest.raises(SeedscopeError, match=r"no metric 'f1' \(metrics: acc\)"):
        read_predictions(RUNS[0], metric="f1")


def test_the_runs_disagree_as_seeds_do(cli):
    code, printed, err = cli(["analyze", *map(str, RUNS)])
    assert code == 0, err
    assert "CON" in printed and "seed2" in printed
