"""HELM run folders, read from a run HELM itself wrote (tests/io/fixtures/helm: 16 instances, 3 train trials)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import detect_format, read_predictions

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "helm" / "simple_mcqa-smollm2"


def helm_mean(stat: str) -> float:
    """HELM's own aggregate of a stat over the test split (stats.json)."""
    stats = json.loads((RUN / "stats.json").read_text())
    return next(s["mean"] for s in stats if s["name"]["name"] == stat and s["name"].get("split") == "test"
                and not s["name"].get("perturbation"))


def test_each_train_trial_is_a_run_and_accuracy_is_helms_exact_match():
    table = read_predictions(RUN)
    assert detect_format(RUN) == "helm" and detect_format(RUN.parent) == "helm"
    assert table["run"].unique().tolist() == ["trial 1", "trial 2", "trial 3"] and len(table) == 48
    assert table.groupby("run")["example_id"].nunique().eq(16).all()
    assert set(table["task"]) == {"simple_mcqa"} and set(table["model"]) == {"huggingface/smollm2"}
    assert set(table["label"]) <= {"Even", "Odd"}
    assert (table["prediction"] == table["label"]).mean() == pytest.approx(helm_mean("exact_match"))


def test_a_multiple_choice_letter_is_mapped_to_its_option():
    table = read_predictions(RUN)
    state = json.loads((RUN / "scenario_state.json").read_text())["request_states"]
    letters = [s for s in state if s["result"]["completions"][0]["text"].strip() in (s.get("output_mapping") or {})]
    assert len(letters) == 6  # SmolLM2 answered six with a letter, all "A" (= Even), right on id38 and id80
    scored = {(r["instance_id"], r["train_trial_index"]): next(s["mean"] for s in r["stats"]
                                                               if s["name"]["name"] == "exact_match")
              for r in json.loads((RUN / "per_instance_stats.json").read_text())}
    for request in letters:
        key = (request["instance"]["id"], request["train_trial_index"])
        option = request["output_mapping"][request["result"]["completions"][0]["text"].strip()]
        row = table[(table["example_id"] == key[0]) & (table["run"] == f"trial {key[1] + 1}")].iloc[0]
        assert row["prediction"] == option  # the letter's option itself, never marked: HELM scored the option
        assert (row["prediction"] == row["label"]) == (scored[key] == 1.0)


def test_metric_picks_a_stat_and_other_stats_are_per_example_scores():
    table = read_predictions(RUN, metric="num_output_tokens")
    assert "label" not in table.columns and table["prediction"].mean() == pytest.approx(helm_mean("num_output_tokens"))
    with pytest.raises(SeedscopeError, match="no per-instance stat 'bleu'"):
        read_predictions(RUN, metric="bleu")


def test_several_run_folders_are_named_after_their_folders(tmp_path):
    for name in ("a", "b"):
        shutil.copytree(RUN, tmp_path / "suite" / name)
    table = read_predictions(tmp_path / "suite")
    assert "b:trial 2" in set(table["run"]) and table["run"].nunique() == 6


def test_a_run_folder_without_stats_is_one_message(tmp_path):
    broken = tmp_path / "run"
    shutil.copytree(RUN, broken)
    (broken / "per_instance_stats.json").write_text("[]")
    with pytest.raises(SeedscopeError, match="the run holds no requests or no per-instance stats"):
        read_predictions(broken, format="helm")


def test_analyze_reads_a_helm_run(cli):
    code, printed, err = cli(["analyze", str(RUN)])
    assert code == 0, err
    assert "trial 3" in printed and "3 train trials read as runs" in printed
