"""`--runner meta` from the command line: a sweep and a factor study of meta-learners, and every bad input."""

from __future__ import annotations

import json

import pytest

SMALL = ["--set", "max_train_examples=80", "--set", "max_eval_examples=24", "--set", "episodes=4", "--set", "shots=2",
         "--set", "queries=3", "--set", "filters=4", "--set", "max_seq_length=24"]


def meta_args(model, out, data_dir, method="protonet"):
    return ["sweep", "--runner", "meta", "--method", method, "--task", "sst2", "--model", str(model), "--seeds", "1,2",
            "--data-dir", str(data_dir), "--out", str(out), *SMALL]


def test_a_meta_sweep_stores_every_prediction_and_analyses(tmp_path, tiny_bert, data_dir, cli):
    code, _, err = cli(meta_args(tiny_bert, tmp_path / "exp", data_dir, "maml"))
    assert code == 0, err
    out = tmp_path / "a.json"
    code, _, err = cli(["analyze", str(tmp_path / "exp"), "--json", str(out), "--n-boot", "100"])
    assert code == 0, err
    result = json.loads(out.read_text())
    assert result["micro"]["n_runs"] == 2 and result["micro"]["n_examples"] == 24
    assert result["micro"]["prob_con"] is not None  # probabilities are stored


def test_a_meta_factor_study_runs_and_is_analysed(tmp_path, tiny_bert, data_dir, cli):
    """Four golden runs: with two, the tiny model's 24-example F1 can tie, and importance (÷ σ_GM) is undefined."""
    out = tmp_path / "study"
    code, stdout, err = cli(["factors", "run", "--runner", "meta", "--method", "reptile", "--task", "sst2",
                             "--model", str(tiny_bert), "--factor", "sample_choice", "--factor", "model_init",
                             "-N", "2", "-M", "2", "-L", "4", "--num-labelled", "40", "--metric", "f1_macro",
                             "--data-dir", str(data_dir), "--out", str(out), "--n-boot", "200", "--details", *SMALL])
    assert code == 0, err
    assert "sample_choice" in stdout and "model_init" in stdout and "Ranking" in stdout
    for command in (["analyze", str(out)], ["report", str(out), "--html", str(tmp_path / "r.html")]):
        code, _, err = cli(command)  # each configuration is one run: no seed spread, and the command that fits
        assert code == 2 and f"its analysis is: seedscope factors analyze {out}" in err and "Traceback" not in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("args, message", [
    (["--runner", "meta", "--method", "full"], "--method full is not a meta method; with --runner meta choose protonet, maml, reptile"),
    (["--method", "maml"], "--method maml is not a finetune method; with --runner finetune choose full, lora (or add --runner meta)"),
    (["--runner", "meta", "--shots", "2"], "--shots is an in-context-learning option; add --runner icl"),
    (["--runner", "meta", "--task", "stsb"], "stsb is a regression task; choose a classification task"),
    (["--runner", "meta", "--set", "shots=200"], "an episode needs 203 examples of class negative"),
    (["--runner", "meta", "--set", "lora_r=8"], "unknown hyper-parameter 'lora_r'"),
])
def test_bad_meta_input_is_one_message_and_writes_nothing(tmp_path, tiny_bert, data_dir, cli, args, message):
    base = ["sweep", "--task", "sst2", "--model", str(tiny_bert), "--seeds", "1", "--data-dir", str(data_dir),
            "--out", str(tmp_path / "exp"), *SMALL]
    for flag in ("--task",):
        if flag in args:
            base[base.index(flag) + 1] = args[args.index(flag) + 1]
            args = [a for i, a in enumerate(args) if a != flag and (i == 0 or args[i - 1] != flag)]
    code, _, err = cli([*base, *args])
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "exp").exists()


def test_a_factor_without_meaning_for_meta_learning_is_refused(tmp_path, tiny_bert, data_dir, cli):
    code, _, err = cli(["factors", "run", "--runner", "meta", "--task", "sst2", "--model", str(tiny_bert),
                        "--factor", "data_order", "-N", "2", "-M", "2", "--out", str(tmp_path / "s"), *SMALL])
    assert code == 2 and "the meta runner cannot vary 'data_order'; it can investigate data_split" in err
    assert not (tmp_path / "s").exists()
