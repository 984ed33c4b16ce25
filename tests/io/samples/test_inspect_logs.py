"""inspect_ai epochs as sampled generations, read from logs inspect_ai itself wrote (tests/io/fixtures/inspect_ai)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import read_predictions, read_samples
from seedscope.io.validate import zip_members

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "inspect_ai"
SAMPLED, EVAL, JSON, OTHER = (FIXTURES / name for name in ("sampled-arith.eval", "sst2-mock.eval", "sst2-mock.json",
                                                           "sst2-mock-b.eval"))


def summaries(path: Path) -> list[dict]:
    return json.loads(zip_members(path)["summaries.json"])


def rewrite(source: Path, target: Path, records: list[dict]) -> Path:
    """``source`` with its summaries replaced (every other member as inspect_ai wrote it)."""
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for name in old.namelist():
            new.writestr(name, json.dumps(records) if name == "summaries.json" else zip_members(source)[name])
    return target


def test_the_epochs_of_a_log_are_the_samples_of_one_run():
    table = read_samples(SAMPLED)
    records = summaries(SAMPLED)
    assert table["run"].unique().tolist() == ["sampled-arith"] and len(table) == len(records) == 32
    assert all(sorted(group) == [0, 1, 2, 3] for _, group in table.groupby("example_id")["sample"])
    for record in records:
        row = table[(table["example_id"] == str(record["id"])) & (table["sample"] == record["epoch"] - 1)].iloc[0]
        score = record["scores"]["match"]
        assert row["correct"] == (score["value"] == "C") and row["prediction"] == score["answer"]
        assert row["label"] == record["target"]
    assert set(table["task"]) == {"arith_sampled"} and set(table["model"]) == {"mockllm/model"}
    assert "scorer match says which samples are correct" in table.attrs["notes"][0]


def test_the_mean_correctness_is_the_scorers_accuracy():
    table = read_samples(SAMPLED)
    header = json.loads(zip_members(SAMPLED)["header.json"])
    accuracy = header["results"]["scores"][0]["metrics"]["accuracy"]["value"]
    assert table["correct"].mean() == pytest.approx(accuracy)


def test_items_differ_in_how_often_they_are_right_and_answers_split():
    per_item = read_samples(SAMPLED).groupby("example_id")
    assert per_item["correct"].sum().nunique() > 2
    assert per_item["prediction"].nunique().max() > 1


def test_epochs_as_runs_gives_one_sample_per_run_as_the_prediction_reader_names_them():
    table = read_samples(EVAL, epochs_as="runs")
    predictions = read_predictions(EVAL)
    assert sorted(table["run"].unique()) == sorted(predictions["run"].unique()) == [f"epoch {k}" for k in range(1, 6)]
    assert table["sample"].eq(0).all() and len(table) == len(predictions) == 60
    merged = table.merge(predictions, on=["run", "example_id"], suffixes=("", "_p"))
    assert merged["correct"].eq(merged["prediction_p"] == merged["label_p"]).all()


def test_several_logs_are_runs_named_after_their_files_and_a_numeric_scorer_is_passed_over():
    table = read_samples([EVAL, OTHER])
    assert sorted(table["run"].unique()) == ["sst2-mock", "sst2-mock-b"]
    assert table.groupby("run")["sample"].nunique().eq(5).all()
    assert "scorer match of match, answer_length" in table.attrs["notes"][0]
    named = read_samples([EVAL, OTHER], run_names=["temperature 0.7", "temperature 1.0"], epochs_as="runs")
    assert "temperature 1.0:epoch 5" in set(named["run"])  # as read_predictions names the epochs of several logs


def test_the_json_log_reads_like_the_archive():
    table = read_samples(JSON)
    assert len(table) == 30 and table.groupby("example_id")["sample"].nunique().eq(5).all()


def test_a_scorer_that_does_not_judge_right_or_wrong_is_refused(tmp_path):
    records = summaries(EVAL)
    records[2]["scores"]["answer_length"]["value"] = 2.0  # a two-word answer: a count, not a verdict
    with pytest.raises(SeedscopeError, match=r"record 3: answer_length score 2\.0 is neither right nor wrong"):
        read_samples(rewrite(EVAL, tmp_path / "long.eval", records), metric="answer_length")
    with pytest.raises(SeedscopeError, match=r"no scorer 'bleu' \(scorers: match, answer_length\)"):
        read_samples(EVAL, metric="bleu")


def test_a_partial_score_is_neither_right_nor_wrong(tmp_path):
    records = summaries(SAMPLED)
    records[5]["scores"]["match"]["value"] = "P"
    with pytest.raises(SeedscopeError, match=r"no scorer says right or wrong for every sample"):
        read_samples(rewrite(SAMPLED, tmp_path / "partial.eval", records))
    with pytest.raises(SeedscopeError, match=r"summaries.json record 6: match score 'P' is neither right nor wrong"):
        read_samples(tmp_path / "partial.eval", metric="match")


def test_epochs_as_samples_is_for_the_sample_analysis_only():
    with pytest.raises(SeedscopeError, match=r"--epochs-as samples reads an inspect_ai log's epochs as the sampled"):
        read_predictions(EVAL, epochs_as="samples")
    assert read_predictions(EVAL, epochs_as="runs")["run"].nunique() == 5
    with pytest.raises(SeedscopeError, match=r"--epochs-as takes 'samples' .* or 'runs' .*, not 'seeds'"):
        read_samples(EVAL, epochs_as="seeds")
