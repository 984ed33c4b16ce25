"""Every bad input of the readers ends `seedscope analyze` with one clear message and exit status 2."""

from __future__ import annotations

import re

import pytest

from seedscope.cli import main


def _missing(tmp_path, data_dir):
    return [str(tmp_path / "seed1.csv")], [], r"seed1.csv does not exist"


def _name_too_long(tmp_path, data_dir):
    return [str(tmp_path / ("x" * 300 + ".csv"))], [], r"cannot use .*File name too long"


def _empty(tmp_path, data_dir):
    (tmp_path / "seed1.csv").touch()
    return [str(tmp_path / "seed1.csv")], [], r"seed1.csv is empty"


def _unknown_column(tmp_path, data_dir):
    (tmp_path / "seed1.csv").write_text("id,pred\n0,1\n")
    return [str(tmp_path / "seed1.csv")], ["--label-column", "gold"], r"no column 'gold' \(available: id, pred\)"


def _malformed_json(tmp_path, data_dir):
    (tmp_path / "seed1.jsonl").write_text('{"id": 0, "prediction": 1}\n{"id": 1, "prediction": 1\n')
    return [str(tmp_path / "seed1.jsonl")], [], r"seed1.jsonl line 2: not valid JSON"


def _duplicate_id(tmp_path, data_dir):
    (tmp_path / "seed1.csv").write_text("id,pred\n0,1\n0,0\n")
    return [str(tmp_path / "seed1.csv")], [], r"example id 0 appears 2 times in run seed1 \(lines 2 and 3\)"


def _label_not_in_task(tmp_path, data_dir):
    (tmp_path / "predict_results_rte.txt").write_text("index\tprediction\n0\tpositive\n")
    return ([str(tmp_path / "predict_results_rte.txt")], ["--data-dir", str(data_dir)],
            r"line 2: 'positive' is not a label of glue-rte \(entailment, not_entailment\)")


def _non_numeric_regression(tmp_path, data_dir):
    (tmp_path / "seed1.csv").write_text("id,prediction\n0,2.5\n1,high\n")
    return [str(tmp_path / "seed1.csv")], [], r"seed1.csv line 3: prediction 'high' is not a number"


def _mixed_formats(tmp_path, data_dir):
    (tmp_path / "seed1.csv").write_text("id,pred\n0,1\n")
    (tmp_path / "seed2.parquet").write_text("x")
    return [str(tmp_path / "seed1.csv"), str(tmp_path / "seed2.parquet")], [], r"mixed formats in one call"


def _list_valued_prediction(tmp_path, data_dir):
    (tmp_path / "seed1.jsonl").write_text('{"id": 0, "prediction": [1, 2]}\n{"id": 1, "prediction": [1]}\n')
    (tmp_path / "seed2.jsonl").write_text('{"id": 0, "prediction": 1}\n{"id": 1, "prediction": 0}\n')
    return ([str(tmp_path / "seed1.jsonl"), str(tmp_path / "seed2.jsonl")], [],
            r"seed1.jsonl line 1: the prediction is a list, not a single label or value")


def _probability_missing_in_one_run(tmp_path, data_dir):
    (tmp_path / "seed1.csv").write_text("id,prediction,prob_0,prob_1\n0,0,0.9,0.1\n1,1,0.2,0.8\n")
    (tmp_path / "seed2.csv").write_text("id,prediction,prob_0,prob_1\n0,0,0.9,0.1\n1,1,,0.8\n")
    return ([str(tmp_path / "seed1.csv"), str(tmp_path / "seed2.csv")], [],
            r"seed2.csv line 3: probability prob_0 is missing or not a number")


def _lm_eval_loglikelihood_not_a_number(tmp_path, data_dir):
    good = '{"doc_id": 0, "target": 1, "filtered_resps": [["-1.5", "False"], ["-0.5", "True"]], "filter": "none"}'
    bad = '{"doc_id": 1, "target": 0, "filtered_resps": [["n/a", "False"], ["-0.5", "True"]], "filter": "none"}'
    (tmp_path / "samples_rte_2024-06-01T10-00-00.jsonl").write_text(good + "\n" + bad + "\n")
    return [str(tmp_path / "samples_rte_2024-06-01T10-00-00.jsonl")], [], r"line 2: log-likelihood 'n/a' is not a number"


def _utf16_csv(tmp_path, data_dir):
    (tmp_path / "seed1.csv").write_text("id,prediction\n0,1\n", encoding="utf-16")
    (tmp_path / "seed2.csv").write_text("id,prediction\n0,1\n")
    return [str(tmp_path / "seed1.csv"), str(tmp_path / "seed2.csv")], [], r"seed1.csv is not UTF-8 text \(byte 0"


def _latin1_jsonl(tmp_path, data_dir):
    (tmp_path / "seed1.jsonl").write_bytes('{"id": 0, "prediction": "caf\u00e9"}\n'.encode("latin-1"))
    return [str(tmp_path / "seed1.jsonl")], [], r"seed1.jsonl is not UTF-8 text \(byte \d+: invalid continuation byte\)"


@pytest.mark.parametrize("case", [_missing, _name_too_long, _empty, _unknown_column, _malformed_json, _duplicate_id,
                                  _label_not_in_task, _non_numeric_regression, _mixed_formats,
                                  _list_valued_prediction, _probability_missing_in_one_run,
                                  _lm_eval_loglikelihood_not_a_number, _utf16_csv, _latin1_jsonl])
def test_bad_input_exits_2_with_one_message(case, tmp_path, data_dir, capsys):
    paths, options, message = case(tmp_path, data_dir)
    out = tmp_path / "out.json"
    with pytest.raises(SystemExit) as exit_info:
        main(["analyze", *paths, *options, "--json", str(out)])
    assert exit_info.value.code == 2
    err = " ".join(capsys.readouterr().err.split())
    assert err.startswith("error: ") and "Traceback" not in err
    assert re.search(message, err), err
    assert not out.exists()
