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
        ("seed,acc\n1,0.7\n1,0.8\n", "s.csv line 3: run 1 of system s appears twice with different scores (acc 0.7 vs 0.8)"),
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


# ---- the shapes real per-seed tables come in (issue: every results file people already have) ----------------

def test_other_metric_columns_are_metrics_never_system_keys(tmp_path):
    """`run,model,acc,f1`: the f1 column used to split every row into a system of its own."""
    path = write(tmp_path / "t.csv", "run,model,acc,f1\nrun 1,A,0.8,0.7\nrun 2,A,0.82,0.71\nrun 3,A,0.79,0.69\n"
                                     "run 1,B,0.85,0.75\nrun 2,B,0.86,0.74\nrun 3,B,0.84,0.76\n")
    scores = read_run_scores(path, metric="acc", run_column="run")
    assert scores.systems == ["A", "B"] and scores.metrics == ["acc"] and scores.paired
    every = read_run_scores(path)
    assert every.systems == ["A", "B"] and every.metrics == ["acc", "f1"]


def test_a_spreadsheet_with_a_run_column_of_names_and_many_metric_columns(tmp_path):
    """`Run` (Run 0, Run 1 …) and one numeric column per metric, some not named like a metric: one system."""
    names = ["eval_accuracy", "eval_loss", "bleu_4", "meteor"] + [f"metric_{i}" for i in range(31)]
    rows = [",".join([f"Run {r}"] + [f"{0.5 + 0.01 * r + 0.001 * i:.4f}" for i in range(35)]) for r in range(4)]
    path = write(tmp_path / "runs.csv", "Run," + ",".join(names) + "\n" + "\n".join(rows) + "\n")
    for run_column in (None, "Run"):
        scores = read_run_scores(path, run_column=run_column)
        assert scores.systems == ["runs"] and len(scores.metrics) == 35 and scores.paired
        assert scores.table["run"].tolist() == ["Run 0", "Run 1", "Run 2", "Run 3"]


@pytest.mark.parametrize("name", ["Seed", "--seed", "TRIAL", "replicate", "rep", "Epoch"])
def test_the_run_column_is_found_by_name_in_any_case(tmp_path, name):
    path = write(tmp_path / "s.csv", f"{name},acc\n1,0.7\n2,0.72\n")
    assert read_run_scores(path).paired


def test_the_run_column_is_found_by_values(tmp_path):
    path = write(tmp_path / "s.csv", "which,model,acc\nseed_3,A,0.7\nseed_4,A,0.72\nseed_3,B,0.6\nseed_4,B,0.65\n")
    scores = read_run_scores(path)
    assert scores.paired and scores.systems == ["A", "B"] and scores.table["run"].tolist() == ["seed_3", "seed_4"] * 2
    assert any("runs named by which (values such as 'seed_3')" in note for note in scores.notes)


def test_a_constant_numeric_column_is_a_setting_and_said_so(tmp_path):
    scores = read_run_scores(write(tmp_path / "s.csv", "model,learning_rate,seed,acc\nA,2e-5,1,0.7\nA,2e-5,2,0.72\n"))
    assert scores.metrics == ["acc"] and any("learning_rate hold(s) one value in every row" in n for n in scores.notes)


def test_exact_duplicate_rows_count_once_with_a_note(tmp_path):
    path = write(tmp_path / "s.csv", "seed,acc\n1,0.8\n2,0.82\n2,0.82\n3,0.79\n1,0.8\n")
    scores = read_run_scores(path)
    assert scores.table["run"].tolist() == ["1", "2", "3"] and scores.table["acc"].tolist() == [0.8, 0.82, 0.79]
    assert any("dropped 2 exact duplicate row(s) (s.csv line 4, s.csv line 6): each run counted once" in n
               for n in scores.notes)


def test_rows_that_share_a_run_but_disagree_name_both_lines(tmp_path):
    a = write(tmp_path / "a.csv", "model,seed,acc\nx,1,0.8\nx,2,0.82\ny,1,0.7\n")
    b = write(tmp_path / "b.csv", "model,seed,acc\nx,2,0.9\ny,2,0.71\n")
    with pytest.raises(SeedscopeError, match=re.escape("a.csv line 3 and ") + ".*" + re.escape(
            "b.csv line 2: run 2 of system x appears twice with different scores (acc 0.82 vs 0.9)")):
        read_run_scores([a, b])


def test_percentages_are_read_as_fractions_with_a_note(tmp_path):
    scores = read_run_scores(write(tmp_path / "p.csv", "seed,acc\n1,85.3%\n2,86.1%\n3, 84.9%\n"))
    assert scores.table["acc"].tolist() == pytest.approx([0.853, 0.861, 0.849])
    assert any("acc was read as percentages (85.3% → 0.853)" in note for note in scores.notes)
    with pytest.raises(SeedscopeError, match="p.csv line 3: acc mixes percentages .85.3%. and plain numbers .0.86."):
        read_run_scores(write(tmp_path / "p.csv", "seed,acc\n1,85.3%\n2,0.86\n"))


def test_a_european_export_is_sniffed_and_said(tmp_path):
    path = write(tmp_path / "eu.csv", "seed;acc;f1\n1;0,853;80%\n2;0,861;81,0%\n3;0,849;79,5%\n")
    scores = read_run_scores(path, metric="acc")
    assert scores.table["acc"].tolist() == [0.853, 0.861, 0.849]
    assert any("read with ';' as the delimiter and ',' as the decimal mark" in note for note in scores.notes)
    assert read_run_scores(path).table["f1"].tolist() == pytest.approx([0.80, 0.81, 0.795])
    assert holds_run_scores([path])


def test_a_rate_outside_its_bounds_is_refused_unless_scale_makes_it_fit(tmp_path):
    path = write(tmp_path / "s.csv", "seed,accuracy\n1,85.3\n2,86.1\n")
    with pytest.raises(SeedscopeError, match=r"s.csv line 2: accuracy 85.3 is outside \[0, 1\].*--scale 0.01"):
        read_run_scores(path)
    scaled = read_run_scores(path, scale=0.01)
    assert scaled.table["accuracy"].tolist() == pytest.approx([0.853, 0.861])
    assert any("multiplied by 0.01" in n for n in scaled.notes)
    with pytest.raises(SeedscopeError, match=r"line 2: accuracy 8.53 is outside \[0, 1\]"):
        read_run_scores(path, scale=0.1)
    with pytest.raises(SeedscopeError, match="--scale must be a positive number"):
        read_run_scores(path, scale=0)
