"""run_glue.py predict files joined with the real GLUE dev labels in ../shared/data."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import read_predictions
from seedscope.predictions import align_runs


def _dev(data_dir, folder: str, column: str) -> pd.Series:
    """The gold column of a GLUE dev file, read independently of seedscope.tasks."""
    return pd.read_csv(data_dir / "glue" / folder / "dev.tsv", sep="\t", quoting=csv.QUOTE_NONE)[column]


def _write(path, values, fmt="{}") -> object:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("index\tprediction\n" + "".join(f"{i}\t{fmt.format(v)}\n" for i, v in enumerate(values)))
    return path


def test_rte_predictions_are_joined_with_the_dev_labels(data_dir, tmp_path):
    gold = _dev(data_dir, "RTE", "label").tolist()
    assert len(gold) == 277
    flip = {"entailment": "not_entailment", "not_entailment": "entailment"}
    runs = {"seed1": gold[:270] + [flip[g] for g in gold[270:]], "seed2": [flip[g] for g in gold[:27]] + gold[27:]}
    paths = [_write(tmp_path / seed / "predict_results_rte.txt", preds) for seed, preds in runs.items()]
    table = read_predictions(paths, data_dir=data_dir)
    assert table.columns.tolist() == ["run", "example_id", "prediction", "label", "task"]
    assert table["run"].unique().tolist() == ["seed1", "seed2"] and table["task"].unique().tolist() == ["glue-rte"]
    first = table[table["run"] == "seed1"]
    assert first["example_id"].tolist() == [str(i) for i in range(277)]
    assert first["label"].tolist() == gold and first["prediction"].tolist() == runs["seed1"]
    aligned = align_runs(table)
    accuracy = (aligned.predictions == aligned.labels).mean(axis=1)
    np.testing.assert_allclose(accuracy, [270 / 277, 250 / 277])


def test_run_folders_and_v3_test_results_name(data_dir, tmp_path):
    gold = _dev(data_dir, "RTE", "label").tolist()
    _write(tmp_path / "a" / "test_results_rte.txt", gold)
    _write(tmp_path / "b" / "predict_results_rte.txt", gold)
    table = read_predictions([tmp_path / "a", tmp_path / "b"], data_dir=data_dir)
    assert table["run"].unique().tolist() == ["a", "b"] and (table["prediction"] == table["label"]).all()


def test_stsb_floats_are_regression(data_dir, tmp_path):
    gold = _dev(data_dir, "STS-B", "score").to_numpy()
    path = _write(tmp_path / "predict_results_stsb.txt", gold[::-1], "{:3.3f}")
    table = read_predictions([path], data_dir=data_dir)
    assert table["prediction"].dtype == float and table["label"].tolist() == gold.tolist()
    assert table["prediction"].iloc[0] == round(gold[-1], 3)
    assert align_runs(table).task_type == "regression"


def test_non_numeric_stsb_value_is_located(data_dir, tmp_path):
    values = ["{:3.3f}".format(v) for v in _dev(data_dir, "STS-B", "score")]
    values[4] = "similar"
    path = _write(tmp_path / "predict_results_stsb.txt", values)
    with pytest.raises(SeedscopeError, match=r"predict_results_stsb.txt line 6: prediction 'similar' is not a number"):
        read_predictions([path], data_dir=data_dir)


def test_label_name_not_in_the_task(data_dir, tmp_path):
    values = _dev(data_dir, "RTE", "label").tolist()
    values[2] = "contradiction"
    path = _write(tmp_path / "predict_results_rte.txt", values)
    with pytest.raises(SeedscopeError, match=r"line 4: 'contradiction' is not a label of glue-rte "
                                             r"\(entailment, not_entailment\)"):
        read_predictions([path], data_dir=data_dir)


def test_test_split_files_are_refused(data_dir, tmp_path):
    path = _write(tmp_path / "predict_results_rte.txt", ["entailment"] * 3000)
    with pytest.raises(SeedscopeError, match=r"has 3000 predictions but the glue-rte validation split has 277 "
                                             r"examples; predict files must come from the labelled dev split"):
        read_predictions([path], data_dir=data_dir)


def test_predict_results_without_task_needs_one(data_dir, tmp_path):
    gold = _dev(data_dir, "RTE", "label").tolist()
    path = _write(tmp_path / "predict_results.txt", gold)
    with pytest.raises(SeedscopeError, match=r"does not say which task it is; pass task= / --task"):
        read_predictions([path], data_dir=data_dir)
    assert read_predictions([path], task="rte", data_dir=data_dir)["label"].tolist() == gold


def test_custom_name_is_detected_by_its_header(data_dir, tmp_path):
    path = _write(tmp_path / "mine.txt", _dev(data_dir, "RTE", "label"))
    assert len(read_predictions([path], task="rte", data_dir=data_dir)) == 277


def test_bad_header_and_bad_lines(data_dir, tmp_path):
    path = tmp_path / "predict_results_rte.txt"
    path.write_text("idx\tpred\n0\tentailment\n")
    with pytest.raises(SeedscopeError, match=r"line 1: expected the header 'index<TAB>prediction', found 'idx\\tpred'"):
        read_predictions([path], data_dir=data_dir)
    path.write_text("index\tprediction\n0 entailment\n")
    with pytest.raises(SeedscopeError, match=r"line 2: expected '<index><TAB><prediction>'"):
        read_predictions([path], data_dir=data_dir)
    path.write_text("index\tprediction\n")
    with pytest.raises(SeedscopeError, match=r"has a header but no predictions"):
        read_predictions([path], data_dir=data_dir)


def test_index_beyond_the_dev_split(data_dir, tmp_path):
    gold = _dev(data_dir, "RTE", "label").tolist()
    path = _write(tmp_path / "predict_results_rte.txt", gold)
    lines = path.read_text().splitlines()
    lines[-1] = "277\t" + gold[-1]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SeedscopeError, match=r"line 278: index beyond the 277 examples of glue-rte"):
        read_predictions([path], data_dir=data_dir)


def test_repeated_index_is_a_duplicate(data_dir, tmp_path):
    gold = _dev(data_dir, "RTE", "label").tolist()
    path = _write(tmp_path / "seed1" / "predict_results_rte.txt", gold)
    lines = path.read_text().splitlines()
    lines[-1] = "0\t" + gold[0]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SeedscopeError, match=r"example id 0 appears 2 times in run seed1 \(lines 2 and 278\)"):
        read_predictions([path], data_dir=data_dir)


def test_unknown_task_in_the_file_name(data_dir, tmp_path):
    path = _write(tmp_path / "predict_results_mnli-mm.txt", ["entailment"])
    with pytest.raises(SeedscopeError, match=r"predict_results_mnli-mm.txt: unknown task 'mnli-mm'"):
        read_predictions([path], data_dir=data_dir)
