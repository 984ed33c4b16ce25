"""inspect_ai logs, read from files inspect_ai itself wrote (tests/io/fixtures/inspect_ai, 5 epochs)."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import detect_format, read_predictions
from seedscope.io.validate import zip_members

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inspect_ai"
EVAL, JSON, OTHER = FIXTURES / "sst2-mock.eval", FIXTURES / "sst2-mock.json", FIXTURES / "sst2-mock-b.eval"


def header(path: Path) -> dict:
    return json.loads(zip_members(path)["header.json"])


def test_each_epoch_is_a_run_and_each_sample_an_example():
    table = read_predictions(EVAL)
    assert detect_format(EVAL) == "inspect" and detect_format(JSON) == "inspect"
    assert table["run"].unique().tolist() == [f"epoch {k}" for k in range(1, 6)]
    assert table.groupby("run")["example_id"].nunique().eq(12).all() and len(table) == 60
    assert set(table["task"]) == {"sst2_mock"} and set(table["model"]) == {"mockllm/model"}
    assert set(table["label"]) == {"negative", "positive"}
    assert "scorer match of match, answer_length" in table.attrs["notes"][0]


def test_accuracy_is_the_scorers_own():
    """The mean over epochs of seedscope's accuracy equals the accuracy inspect_ai recorded for `match`."""
    table = read_predictions(EVAL)
    ours = (table["prediction"] == table["label"]).mean()
    theirs = next(s for s in header(EVAL)["results"]["scores"] if s["name"] == "match")["metrics"]["accuracy"]["value"]
    assert ours == pytest.approx(theirs)


def test_the_json_log_reads_like_the_archive():
    table = read_predictions(JSON)
    log = json.loads(JSON.read_text())
    assert len(table) == len(log["samples"]) == 30
    first = log["samples"][0]
    row = table[(table["run"] == f"epoch {first['epoch']}") & (table["example_id"] == str(first["id"]))].iloc[0]
    assert (row["prediction"] == row["label"]) == (first["scores"]["match"]["value"] == "C")


def test_metric_picks_the_scorer_and_numbers_are_per_example_scores(tmp_path):
    table = read_predictions(EVAL, metric="answer_length")
    assert "label" not in table.columns and table["prediction"].eq(1.0).all()
    assert table.attrs["regression_tasks"] == ["sst2_mock"]
    with pytest.raises(SeedscopeError, match=r"no scorer 'bleu' \(scorers: match, answer_length\)"):
        read_predictions(EVAL, metric="bleu")


def test_several_logs_of_one_model_are_runs_named_after_their_files_and_a_folder_reads_them_all(tmp_path):
    table = read_predictions([EVAL, OTHER])
    assert table["run"].nunique() == 10 and "sst2-mock-b:epoch 3" in set(table["run"])
    folder = tmp_path / "logs"
    folder.mkdir()
    for path in (EVAL, OTHER):
        shutil.copy(path, folder)
    assert detect_format(folder) == "inspect" and len(read_predictions(folder)) == 120


def test_an_archive_compressed_with_deflate_as_older_inspect_ai_wrote_it(tmp_path):
    older = tmp_path / "deflate.eval"
    with zipfile.ZipFile(EVAL) as source, zipfile.ZipFile(older, "w", zipfile.ZIP_DEFLATED) as target:
        for name in source.namelist():
            target.writestr(name, json.dumps(json.loads(zip_members(EVAL)[name])))
    assert read_predictions(older).equals(read_predictions(EVAL))


def test_bad_logs_are_one_message(tmp_path):
    broken = tmp_path / "broken.eval"
    broken.write_text("not a zip")
    with pytest.raises(SeedscopeError, match="not an inspect_ai .eval archive"):
        read_predictions(broken)
    empty = tmp_path / "empty.json"
    log = json.loads(JSON.read_text())
    log["samples"] = []
    empty.write_text(json.dumps(log, indent=2))
    with pytest.raises(SeedscopeError, match="the log holds no samples"):
        read_predictions(empty, format="inspect")


def test_analyze_and_compare_read_inspect_logs(cli):
    code, printed, err = cli(["analyze", str(EVAL), "--top", "2", "--details"])
    assert code == 0, err
    assert "CON" in printed and "epoch 5" in printed
    code, printed, err = cli(["compare", str(EVAL), str(OTHER), "--n-boot", "200"])
    assert code == 0, err
    assert "sst2-mock vs sst2-mock-b" in printed
