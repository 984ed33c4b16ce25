"""Per-run score tables as researchers publish them: long, wide, and straight out of a spreadsheet."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import holds_run_scores, read_run_scores

#: a spreadsheet export: UTF-8 BOM, CR-only line ends, an empty row, a blank line, summary rows at the bottom
SPREADSHEET = (
    "\ufeffmodel_name,dataset_name,learning_rate,seed,set_type,acc\r"
    "bert-base,rte,2e-05,1,dev,0.7004\r"
    "bert-base,rte,2e-05,2,dev,0.6715\r"
    "bert-base,rte,2e-05,3,dev,0.6931\r"
    "roberta-base,rte,2e-05,1,dev,0.7834\r"
    "roberta-base,rte,2e-05,2,dev,0.7617\r"
    "roberta-base,rte,2e-05,3,dev,0.7906\r"
    ",,,,,\r"
    "\r"
    "Mean,,,,,0.7335\r"
    "Standard deviation,,,,,0.0493\r"
)


def write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_spreadsheet_export_with_bom_cr_line_ends_and_summary_rows(tmp_path):
    path = write(tmp_path / "seeds.csv", SPREADSHEET)
    assert path.read_bytes().startswith(b"\xef\xbb\xbf") and b"\n" not in path.read_bytes()
    assert holds_run_scores([path])
    scores = read_run_scores(path)
    assert scores.systems == ["bert-base", "roberta-base"] and scores.metrics == ["acc"] and scores.paired
    assert scores.tasks == ["rte"]
    assert scores.table["run"].tolist() == ["1", "2", "3"] * 2
    assert scores.table["acc"].tolist() == [0.7004, 0.6715, 0.6931, 0.7834, 0.7617, 0.7906]
    assert any("Mean (line 10), Standard deviation (line 11)" in note for note in scores.notes)
    assert any("told apart by model_name" in note for note in scores.notes)


@pytest.mark.parametrize("newline", ["\r\n", "\n"])
def test_crlf_and_lf_read_the_same(tmp_path, newline):
    path = write(tmp_path / "seeds.csv", SPREADSHEET.replace("\r", newline))
    assert read_run_scores(path).table["acc"].tolist() == [0.7004, 0.6715, 0.6931, 0.7834, 0.7617, 0.7906]


def test_wide_table_one_column_per_system(tmp_path):
    path = write(tmp_path / "wide.csv", "seed,bert,roberta\n13,0.70,0.80\n42,0.72,0.78\n87,0.69,0.83\n")
    scores = read_run_scores(path)
    assert scores.systems == ["bert", "roberta"] and scores.paired
    assert scores.table.set_index(["system", "run"])["score"].to_dict()[("roberta", "42")] == 0.78


def test_without_a_run_column_each_row_is_an_unpaired_run(tmp_path):
    path = write(tmp_path / "wide.csv", "bert,roberta\n0.70,0.80\n0.72,0.78\n")
    scores = read_run_scores(path)
    assert not scores.paired and scores.table["run"].tolist() == ["row 1", "row 2"] * 2


def test_one_system_per_file_named_after_the_file_and_json_lines(tmp_path):
    a = write(tmp_path / "bert.jsonl", '{"seed": 1, "eval_accuracy": 0.7}\n{"seed": 2, "eval_accuracy": 0.72}\n')
    b = write(tmp_path / "roberta.csv", "seed,eval_accuracy\n1,0.8\n2,0.79\n")
    scores = read_run_scores([a, b])
    assert scores.systems == ["bert", "roberta"] and scores.metrics == ["eval_accuracy"]


def test_explicit_run_metric_and_system_columns(tmp_path):
    path = write(tmp_path / "s.csv", "model,lr,trial,loss,my_score\nA,1,1,0.3,0.5\nA,2,1,0.2,0.6\nA,1,2,0.3,0.55\nA,2,2,0.1,0.65\n")
    scores = read_run_scores(path, run_column="trial", metric="my_score", system_columns=["lr"])
    assert scores.systems == ["1", "2"] and scores.metrics == ["my_score"]
    assert scores.table.set_index(["system", "run"])["my_score"].to_dict() == {
        ("1", "1"): 0.5, ("2", "1"): 0.6, ("1", "2"): 0.55, ("2", "2"): 0.65}


def test_the_task_filter(tmp_path):
    path = write(tmp_path / "s.csv", "task,model,seed,acc\nrte,A,1,0.6\nrte,A,2,0.7\ncb,A,1,0.8\ncb,A,2,0.9\n")
    assert read_run_scores(path, task="cb").table["acc"].tolist() == [0.8, 0.9]
    with pytest.raises(SeedscopeError, match="no runs of task 'mrpc'"):
        read_run_scores(path, task="mrpc")


def test_prediction_tables_are_not_score_tables(tmp_path):
    predictions = write(tmp_path / "p.csv", "example_id,prediction,label\n1,0,0\n")
    scores = write(tmp_path / "s.csv", "seed,acc\n1,0.7\n")
    assert not holds_run_scores([predictions])
    with pytest.raises(SeedscopeError, match="mixed inputs"):
        holds_run_scores([scores, predictions])


@pytest.mark.parametrize(
    "text, message",
    [
        ("seed,acc\n1,0.7\n1,0.8\n", "run 1 of system s appears more than once"),
        ("seed,acc\n1,0.7\n2,high\n", "s.csv line 3: score acc 'high' is not a finite number"),
        ("seed,acc\n1,0.7\n2,inf\n", "line 3: score acc"),
        ("seed,acc\n1,0.7\n,0.8\n", "s.csv line 3: the run (seed) is empty"),
        ("seed,name\n1,x\n2,y\n", "found no score column"),
        ("seed,acc\nMean,0.7\n", "holds no runs (only empty or summary rows)"),
    ],
)
def test_bad_score_tables(tmp_path, text, message):
    path = write(tmp_path / "s.csv", text)
    with pytest.raises(SeedscopeError, match=re.escape(message)):
        read_run_scores(path)
