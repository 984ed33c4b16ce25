"""Plain sample tables: told apart by their ``sample`` and ``correct`` columns, read into one checked table."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import holds_sample_tables, read_sample_tables


def write_samples(path: Path, run: str | None = "s1") -> Path:
    frame = pd.DataFrame({"example_id": ["007", "007", "8", "8"], "sample": [0, 1, 0, 1], "correct": [1, 0, 1, 1],
                          "prediction": ["a", "b", "c", "c"]})
    if run is not None:
        frame.insert(0, "run", run)
    if path.suffix == ".parquet":
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, sep="\t" if path.suffix == ".tsv" else ",")
    return path


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".parquet"])
def test_detected_and_read(tmp_path, suffix):
    path = write_samples(tmp_path / f"samples{suffix}")
    assert holds_sample_tables([path])
    table = read_sample_tables([path])
    assert table["example_id"].tolist() == ["007", "007", "8", "8"]  # ids stay text
    assert table["correct"].tolist() == [1.0, 0.0, 1.0, 1.0] and set(table["run"]) == {"s1"}


def test_files_without_a_run_column_are_runs_named_after_them(tmp_path):
    paths = [write_samples(tmp_path / "seed1.csv", None), write_samples(tmp_path / "seed2.csv", None)]
    assert sorted(read_sample_tables(paths)["run"].unique()) == ["seed1", "seed2"]


def test_prediction_tables_are_not_sample_tables_and_mixes_are_refused(tmp_path):
    predictions = tmp_path / "preds.csv"
    predictions.write_text("run,example_id,prediction,label\n1,a,0,0\n")
    assert not holds_sample_tables([predictions])
    with pytest.raises(SeedscopeError, match="mixed inputs"):
        holds_sample_tables([write_samples(tmp_path / "s.csv"), predictions])


def test_a_bad_sample_table_names_its_file(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text("run,example_id,sample,correct\ns1,a,0,1\ns1,a,0,0\n")
    with pytest.raises(SeedscopeError, match=r"bad\.csv: sample 0 of example 'a' in run 's1' appears twice"):
        read_sample_tables([path])
