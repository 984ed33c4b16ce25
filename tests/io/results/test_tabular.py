"""Plain tables: one file per run or one long table, four file types, column options, bad input."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import read_predictions
from seedscope.predictions import align_runs

RUN_A = pd.DataFrame({"id": ["007", "1", "2"], "pred": ["pos", "neg", "neg"], "gold": ["pos", "neg", "pos"]})
RUN_B = pd.DataFrame({"id": ["007", "1", "2"], "pred": ["pos", "pos", "pos"], "gold": ["pos", "neg", "pos"]})


def _write(frame: pd.DataFrame, path, fmt: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "csv":
        frame.to_csv(path, index=False)
    elif fmt == "tsv":
        frame.to_csv(path, sep="\t", index=False)
    elif fmt == "jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_parquet(path, index=False)
    return path


@pytest.mark.parametrize("fmt", ["csv", "tsv", "jsonl", "parquet"])
def test_one_file_per_run_with_auto_detected_columns(tmp_path, fmt):
    paths = [_write(f, tmp_path / f"seed{i}.{fmt}", fmt) for i, f in ((1, RUN_A), (2, RUN_B))]
    table = read_predictions(paths)
    assert table.columns.tolist() == ["run", "example_id", "prediction", "label"]
    assert table["run"].tolist() == ["seed1"] * 3 + ["seed2"] * 3
    assert table["example_id"].tolist() == ["007", "1", "2"] * 2  # ids are text: 007 stays 007
    assert table["prediction"].tolist() == ["pos", "neg", "neg", "pos", "pos", "pos"]
    aligned = align_runs(table)
    assert aligned.classes == ["neg", "pos"] and aligned.labels.tolist() == [1, 0, 1]


def test_json_array_of_records(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps([{"doc_id": 1, "prediction": 0, "target": 1}, {"doc_id": 2, "prediction": 1, "target": 1}]))
    table = read_predictions([path])
    assert table["example_id"].tolist() == ["1", "2"] and table["label"].tolist() == [1, 1]


def test_long_table_with_a_seed_column_and_integer_labels(tmp_path):
    frame = pd.DataFrame({"seed": [42, 42, 52, 52], "idx": [0, 1, 0, 1], "predicted_label": [1, 0, 1, 1],
                          "label": [1, 0, 1, 0]})
    table = read_predictions([_write(frame, tmp_path / "all.parquet", "parquet")])
    assert table["run"].tolist() == ["42", "42", "52", "52"]
    assert table["example_id"].dtype == np.int64 and table["example_id"].tolist() == [0, 1] * 2  # Parquet's numbers
    assert align_runs(table).predictions.tolist() == [[1, 0], [1, 1]]


def test_configured_column_names(tmp_path):
    frame = pd.DataFrame({"trial": ["a", "a"], "uid": ["x", "y"], "guess": [1, 0], "truth": [1, 1], "id": [5, 6]})
    path = _write(frame, tmp_path / "t.csv", "csv")
    table = read_predictions([path], run_column="trial", id_column="uid", prediction_column="guess", label_column="truth")
    assert table[["run", "example_id", "prediction", "label"]].values.tolist() == [["a", "x", 1, 1], ["a", "y", 0, 1]]


def test_unknown_column_is_named_with_the_available_ones(tmp_path):
    path = _write(RUN_A, tmp_path / "seed1.csv", "csv")
    with pytest.raises(SeedscopeError, match=r"seed1.csv: no column 'answer' \(available: id, pred, gold\)"):
        read_predictions([path], prediction_column="answer")


def test_undetectable_column_lists_what_was_tried(tmp_path):
    path = _write(pd.DataFrame({"key": [1], "pred": [1]}), tmp_path / "r.csv", "csv")
    with pytest.raises(SeedscopeError, match=r"found no example-id column \(looked for example_id, id, idx, doc_id.*"
                                             r"available: key, pred\); name it with id_column / --id-column"):
        read_predictions([path])
    path = _write(pd.DataFrame({"id": [1], "output": [1]}), tmp_path / "r.csv", "csv")
    with pytest.raises(SeedscopeError, match=r"found no prediction column"):
        read_predictions([path])


def test_regression_values_become_floats(tmp_path):
    paths = [_write(pd.DataFrame({"id": [0, 1], "prediction": ["3.214", "0.870"], "label": [3.0, 1.0]}),
                    tmp_path / f"s{i}.csv", "csv") for i in (1, 2)]
    table = read_predictions(paths)
    assert table["prediction"].dtype == float and table["prediction"].tolist()[:2] == [3.214, 0.87]
    assert align_runs(table).task_type == "regression"


def test_non_numeric_regression_value_names_file_and_line(tmp_path):
    path = tmp_path / "s1.csv"
    path.write_text("id,prediction,label\n0,3.2,3.0\n1,high,1.0\n")
    with pytest.raises(SeedscopeError, match=r"s1.csv line 3: prediction 'high' is not a number \(regression"):
        read_predictions([path])
    path.write_text("id,prediction,label\n0,3,3.0\n1,2,none given\n")
    with pytest.raises(SeedscopeError, match=r"s1.csv line 3: label 'none given' is not a number"):
        read_predictions([path], task_type="regression")


def test_nan_prediction_and_empty_id_name_file_and_line(tmp_path):
    path = tmp_path / "s1.jsonl"
    path.write_text('{"id": 0, "prediction": 1.5}\n\n{"id": 1, "prediction": NaN}\n')
    with pytest.raises(SeedscopeError, match=r"s1.jsonl line 3: the prediction is empty"):
        read_predictions([path])
    path.write_text('{"id": 0, "prediction": 1}\n{"id": null, "prediction": 1}\n')
    with pytest.raises(SeedscopeError, match=r"s1.jsonl line 2: the example id is empty"):
        read_predictions([path])
    csv = tmp_path / "s1.csv"
    csv.write_text("id,prediction\n0,1\n,1\n")
    with pytest.raises(SeedscopeError, match=r"s1.csv line 3: the example id is empty"):
        read_predictions([csv])


def test_ids_of_every_type_become_text(tmp_path):
    path = tmp_path / "s1.jsonl"
    path.write_text('{"id": 7.0, "prediction": 1}\n{"id": "007", "prediction": 1}\n{"id": 8, "prediction": 1}\n')
    assert read_predictions([path])["example_id"].tolist() == ["7", "007", "8"]
    frame = pd.DataFrame({"id": [1.0, 2.5], "prediction": [1, 0]})
    assert read_predictions([_write(frame, tmp_path / "f.parquet", "parquet")])["example_id"].tolist() == ["1", "2.5"]


def test_probability_columns(tmp_path):
    frame = RUN_A.assign(prob_neg=[0.1, 0.8, 0.6], prob_pos=[0.9, 0.2, 0.4])
    table = read_predictions([_write(frame, tmp_path / "a.csv", "csv")])
    assert table.columns.tolist() == ["run", "example_id", "prediction", "label", "prob_neg", "prob_pos"]
    renamed = frame.rename(columns={"prob_neg": "p_neg", "prob_pos": "p_pos"})
    path = _write(renamed, tmp_path / "b.csv", "csv")
    by_prefix = read_predictions([path], prob_columns="p_")
    by_mapping = read_predictions([path], prob_columns={"p_neg": "neg", "p_pos": "pos"})
    for other in (by_prefix, by_mapping):
        pd.testing.assert_frame_equal(other.drop(columns="run"), table.drop(columns="run"))
    assert align_runs(table).probabilities[0, 0].tolist() == [0.1, 0.9]
    with pytest.raises(SeedscopeError, match=r"no probability column 'score_' and no column starting with it"):
        read_predictions([path], prob_columns="score_")
    with pytest.raises(SeedscopeError, match=r"no column 'p_x' \(available"):
        read_predictions([path], prob_columns={"p_x": "x"})


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_list_valued_probabilities(tmp_path, fmt):
    frame = pd.DataFrame({"id": [0, 1], "prediction": [1, 0], "probs": [[0.3, 0.7], [0.6, 0.4]]})
    if fmt == "csv":
        frame["probs"] = frame["probs"].map(json.dumps)
    table = read_predictions([_write(frame, tmp_path / f"r.{fmt}", fmt)])
    assert table[["prob_0", "prob_1"]].values.tolist() == [[0.3, 0.7], [0.6, 0.4]]


def test_ragged_probability_lists_are_located(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": 0, "prediction": 1, "probs": [0.3, 0.7]}\n{"id": 1, "prediction": 1, "probs": [1.0]}\n')
    with pytest.raises(SeedscopeError, match=r"r.jsonl line 2: probs has 1 probabilities, the first row 2"):
        read_predictions([path])
    path.write_text('{"id": 0, "prediction": 1, "probs": [0.3, 0.7]}\n{"id": 1, "prediction": 1, "probs": null}\n')
    with pytest.raises(SeedscopeError, match=r"r.jsonl line 2: probs None is not a list of numbers"):
        read_predictions([path])


def test_duplicate_example_id_within_a_run(tmp_path):
    path = tmp_path / "seed1.csv"
    path.write_text("id,pred\n1,a\n2,b\n1,c\n")
    with pytest.raises(SeedscopeError, match=r"seed1.csv: example id 1 appears 2 times in run seed1 \(lines 2 and 4\)"):
        read_predictions([path])


def test_same_file_name_in_seed_folders_takes_the_folder_name(tmp_path):
    paths = [_write(RUN_A, tmp_path / s / "predictions.csv", "csv") for s in ("seed1", "seed2")]
    assert read_predictions(paths)["run"].unique().tolist() == ["seed1", "seed2"]
    paths = [_write(RUN_A, tmp_path / a / "seed" / "predictions.csv", "csv") for a in ("x", "y")]
    assert read_predictions(paths)["run"].unique().tolist() == ["x/seed/predictions", "y/seed/predictions"]


def test_explicit_run_names(tmp_path):
    paths = [_write(RUN_A, tmp_path / f"{i}.csv", "csv") for i in (1, 2)]
    assert read_predictions(paths, run_names=["s42", "s52"])["run"].unique().tolist() == ["s42", "s52"]
    with pytest.raises(SeedscopeError, match=r"1 run name\(s\) given for 2 input\(s\)"):
        read_predictions(paths, run_names=["s42"])
    with pytest.raises(SeedscopeError, match=r"run names must be distinct"):
        read_predictions(paths, run_names=["s", "s"])


def test_same_run_in_two_long_tables_is_refused(tmp_path):
    frame = pd.DataFrame({"run": ["r1"], "id": [0], "prediction": [1]})
    paths = [_write(frame, tmp_path / f"{i}.csv", "csv") for i in (1, 2)]
    with pytest.raises(SeedscopeError, match=r"run r1 comes from both .*1.csv and .*2.csv"):
        read_predictions(paths)


def test_task_and_model_columns_are_kept_and_task_selects(tmp_path):
    frame = pd.DataFrame({"run": ["1", "1", "1"], "task": ["rte", "cola", "cola"], "model": ["m"] * 3,
                          "id": [0, 0, 1], "prediction": [1, 0, 1]})
    path = _write(frame, tmp_path / "all.csv", "csv")
    table = read_predictions([path])
    assert table.columns.tolist() == ["run", "example_id", "prediction", "task", "model"] and len(table) == 3
    assert read_predictions([path], task="cola")["example_id"].tolist() == ["0", "1"]
    with pytest.raises(SeedscopeError, match=r"no rows of task 'sst2' \(tasks in the file: cola, rte\)"):
        read_predictions([path], task="sst2")
    named = RUN_A.replace({"pos": "positive", "neg": "negative"})  # the task's own label names
    single = read_predictions([_write(named, tmp_path / "s.csv", "csv")], task="sst2")
    assert single["task"].unique().tolist() == ["sst2"]


def test_missing_file(tmp_path):
    with pytest.raises(SeedscopeError, match=rf"{re.escape(str(tmp_path / 'nope.csv'))} does not exist"):
        read_predictions([tmp_path / "nope.csv"])


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_empty_file(tmp_path, fmt):
    path = tmp_path / f"empty.{fmt}"
    path.touch()
    with pytest.raises(SeedscopeError, match=r"empty\.\w+ is empty"):
        read_predictions([path])


def test_header_only_and_blank_files(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("id,prediction\n")
    with pytest.raises(SeedscopeError, match=r"h.csv has column names but no rows"):
        read_predictions([path])
    path = tmp_path / "b.jsonl"
    path.write_text("\n\n")
    with pytest.raises(SeedscopeError, match=r"b.jsonl holds no records"):
        read_predictions([path])


def test_malformed_json_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": 0, "prediction": 1}\n{"id": 1, "prediction": }\n')
    with pytest.raises(SeedscopeError, match=r"r.jsonl line 2: not valid JSON \(Expecting value\)"):
        read_predictions([path])
    path.write_text('{"id": 0, "prediction": 1}\n[1, 2]\n')
    with pytest.raises(SeedscopeError, match=r"r.jsonl line 2: expected a JSON object, found list"):
        read_predictions([path])


def test_not_a_parquet_file(tmp_path):
    path = tmp_path / "r.parquet"
    path.write_text("id,prediction\n0,1\n")
    with pytest.raises(SeedscopeError, match=r"r.parquet is not a readable Parquet file"):
        read_predictions([path])


def test_empty_run_in_a_long_table(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("run,id,prediction\n1,0,a\n,1,b\n")
    with pytest.raises(SeedscopeError, match=r"t.csv line 3: the run is empty"):
        read_predictions([path])


def test_a_single_path_and_no_path(tmp_path):
    path = _write(RUN_A, tmp_path / "seed1.csv", "csv")
    assert len(read_predictions(path)) == 3 and len(read_predictions(str(path))) == 3
    with pytest.raises(SeedscopeError, match=r"no input given"):
        read_predictions([])



def test_task_names_a_registry_task_and_its_labels(tmp_path):
    path = tmp_path / "seed1.csv"
    pd.DataFrame({"id": [0, 1], "prediction": ["positive", "negative"], "label": ["positive", "positive"]}).to_csv(
        path, index=False)
    assert set(read_predictions([path], task="sst2")["task"]) == {"sst2"}
    with pytest.raises(SeedscopeError, match="unknown task 'sst-7'"):
        read_predictions([path], task="sst-7")
    with pytest.raises(SeedscopeError, match="prediction value\\(s\\) negative, positive are not labels of glue-rte"):
        read_predictions([path], task="rte")
