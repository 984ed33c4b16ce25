"""Format detection from suffix, name and content; format= override; one format per call."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import detect_format, read_predictions


def test_suffixes_names_and_content(tmp_path, lm):
    table = tmp_path / "r.jsonl"
    table.write_text('{"id": 0, "prediction": 1}\n')
    samples = lm.jsonl(tmp_path / "anything.jsonl", [lm.mc(0, [-1.0, -2.0], 0)])
    named = lm.jsonl(tmp_path / f"samples_rte_{lm.stamp}.jsonl", [lm.mc(0, [-1.0, -2.0], 0)])
    old = lm.array(tmp_path / "pretrained=m_rte.jsonl", [lm.mc(0, [-1.0, -2.0], 0, version="0.4.2")])
    predict = tmp_path / "predict_results_rte.txt"
    predict.write_text("index\tprediction\n0\tentailment\n")
    custom = tmp_path / "mine.txt"
    custom.write_text("index\tprediction\n0\tentailment\n")
    expected = {table: "jsonl", samples: "lm-eval", named: "lm-eval", old: "lm-eval", predict: "run-glue",
                custom: "run-glue", tmp_path / "a.csv": "csv", tmp_path / "a.TSV": "tsv", tmp_path / "a.parquet": "parquet"}
    for path, fmt in expected.items():
        path.touch()
        assert detect_format(path) == fmt, path


def test_folders(tmp_path, lm):
    lm.jsonl(tmp_path / "lm" / "model" / f"samples_rte_{lm.stamp}.jsonl", [lm.mc(0, [-1.0, -2.0], 0)])
    (tmp_path / "glue").mkdir()
    (tmp_path / "glue" / "predict_results_rte.txt").write_text("index\tprediction\n")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "catalog.sqlite").touch()
    assert [detect_format(tmp_path / d) for d in ("lm", "glue", "store")] == ["lm-eval", "run-glue", "store"]
    (tmp_path / "nothing").mkdir()
    with pytest.raises(SeedscopeError, match=r"nothing is a folder without catalog.sqlite \(experiment store\)"):
        detect_format(tmp_path / "nothing")


def test_unknown_suffix_and_unknown_format_name(tmp_path):
    path = tmp_path / "preds.xlsx"
    path.write_text("x")
    with pytest.raises(SeedscopeError, match=r"cannot tell the format of .*preds.xlsx from its name; pass format="):
        read_predictions([path])
    with pytest.raises(SeedscopeError, match=r"unknown format 'excel'; use one of csv, tsv, jsonl, parquet, lm-eval"):
        read_predictions([path], format="excel")


def test_format_override(tmp_path):
    path = tmp_path / "preds.dat"
    path.write_text("id\tprediction\n0\t1\n")
    assert read_predictions([path], format="TSV")["prediction"].tolist() == [1]
    samples = tmp_path / "samples.out"
    samples.write_text('{"doc_id": 0, "target": "0", "filtered_resps": [["-1.0", "True"], ["-2.0", "False"]]}\n')
    assert read_predictions([samples], format="lm_eval")["prediction"].tolist() == [0]


def test_mixed_formats_in_one_call(tmp_path, lm):
    table = tmp_path / "seed1.csv"
    table.write_text("id,prediction\n0,1\n")
    samples = lm.jsonl(tmp_path / f"samples_rte_{lm.stamp}.jsonl", [lm.mc(0, [-1.0, -2.0], 0)])
    with pytest.raises(SeedscopeError, match=r"mixed formats in one call \(.*seed1.csv is csv; .*samples_rte_.* is "
                                             r"lm-eval\); read each format separately"):
        read_predictions([table, samples])


def test_a_first_line_longer_than_the_sniffed_part(tmp_path, lm, monkeypatch):
    from seedscope.io.results import lm_eval

    path = lm.jsonl(tmp_path / "long.jsonl", [lm.mc(0, [-1.0, -2.0], 0)])
    monkeypatch.setattr(lm_eval, "SNIFF_CHARS", 40)
    assert detect_format(path) == "lm-eval"
    table = tmp_path / "table.jsonl"
    table.write_text('{"id": 0, "prediction": 1, "text": "' + "x" * 100 + '"}\n')
    assert detect_format(table) == "jsonl"
