"""`--runner icl` from the command line: sweeps and factor studies of prompted models, and every bad input."""

from __future__ import annotations

import pandas as pd
import pytest

from seedscope.store import ExperimentStore


def icl_args(model, out, data_dir, *extra) -> list[str]:
    return ["sweep", "--runner", "icl", "--task", "sst2", "--model", str(model), "--seeds", "1,2", "--shots", "1",
            "--prompt-format", "minimal", "--set", "max_eval_examples=8", "--out", str(out), "--data-dir", str(data_dir),
            *extra]


def test_an_icl_sweep_stores_every_run(tmp_path, tiny_llama, data_dir, cli):
    out = tmp_path / "exp"
    code, printed, err = cli(icl_args(tiny_llama, out, data_dir))
    assert code == 0, err
    store = ExperimentStore.open(out)
    runs = store.runs()
    assert runs["status"].tolist() == ["done", "done"] and set(runs["method"]) == {"icl"}
    assert runs["run_id"].str.contains("__icl__").all() and store.verify() == []
    assert {"prob_negative", "prob_positive"} <= set(store.predictions().columns)
    assert "CON" in printed and "majority-class baseline" in printed


def test_a_calibrated_sweep_shows_the_seed_spread_with_and_without_calibration(tmp_path, tiny_llama, data_dir, cli):
    out = tmp_path / "exp"
    code, printed, err = cli(icl_args(tiny_llama, out, data_dir, "--set", "calibration=contextual"))
    assert code == 0, err
    assert "Contextual calibration: the seed spread without and with it" in printed
    assert "sst2 / uncalibrated" in printed and "sst2 / calibrated" in printed
    store = ExperimentStore.open(out)
    calibrated, uncalibrated = store.predictions(), store.predictions(uncalibrated=True)
    assert list(calibrated.columns) == list(uncalibrated.columns) and not calibrated.columns.str.startswith("uncal").any()
    stored = store.runs()["metrics"].iloc[0]
    by_run = uncalibrated[uncalibrated["run"] == "1"]
    assert stored["uncalibrated_accuracy"] == (by_run["prediction"] == by_run["label"]).mean()
    assert not calibrated[["prob_negative", "prob_positive"]].equals(uncalibrated[["prob_negative", "prob_positive"]])


def test_the_format_as_a_randomness_factor(tmp_path, tiny_chat_llama, data_dir, cli):
    out = tmp_path / "exp"
    args = icl_args(tiny_chat_llama, out, data_dir)
    args[args.index("--prompt-format") + 1] = "minimal,instruction,chat"
    assert cli(args)[0] == 0
    formats = ExperimentStore.open(out).environment()["prompt_format"]
    assert set(formats) <= {"minimal", "instruction", "chat"}


@pytest.mark.parametrize(("change", "message"), [
    ({"--prompt-format": "fancy"}, "unknown prompt format 'fancy'"),
    ({"--task": "stsb"}, "task stsb has no verbaliser"),
    ({"--shots": "30", "--set": "num_labelled=20"}, "30 demonstrations of class negative asked for"),
    ({"--shots": "400"}, "tokens, longer than the 256 positions"),
    ({"--prompt-format": "chat"}, "needs a model with a chat template"),
])
def test_bad_icl_input_is_one_message_and_writes_nothing(tmp_path, tiny_llama, data_dir, cli, change, message):
    args = icl_args(tiny_llama, tmp_path / "exp", data_dir)
    for flag, value in change.items():
        args[args.index(flag) + 1] = value
    code, _, err = cli(args)
    assert code == 2 and message in err and "Traceback" not in err
    assert not (tmp_path / "exp").exists()


def test_a_sampled_sweep_keeps_every_sample_with_its_seed(tmp_path, tiny_llama, data_dir, cli):
    out = tmp_path / "exp"
    code, _, err = cli(icl_args(tiny_llama, out, data_dir, "--samples", "3", "--temperature", "0.8", "--top-p", "0.9",
                                "--top-k", "20", "--max-new-tokens", "4"))
    assert code == 0, err
    store = ExperimentStore.open(out)
    assert store.verify() == []
    runs = store.runs()
    first = runs["run_id"].iloc[0]
    samples = pd.read_parquet(store.samples_path(first))
    assert len(samples) == 8 * 3 and all(sorted(s) == [0, 1, 2] for _, s in samples.groupby("example_id")["sample"])
    assert samples["sample_seed"].nunique() == 24
    predictions = pd.read_parquet(store.prediction_path(first))
    first_samples = samples[samples["sample"] == 0].set_index("example_id")["prediction"]
    assert predictions.set_index("example_id")["prediction"].equals(first_samples.loc[predictions["example_id"]])
    environment = store.environment()
    assert environment["sampling.samples"].eq(3).all() and environment["sampling.temperature"].eq(0.8).all()
    assert environment["seeds.sampling"].tolist() == [1, 2]


@pytest.mark.parametrize(("extra", "message"), [
    (["--samples", "0"], "--samples must be at least 1, not 0"),
    (["--samples", "2", "--temperature", "-0.5"], "--temperature must be positive, not -0.5"),
    (["--temperature", "0.7"], "--temperature shapes sampled answers, and none are drawn; add --samples N"),
    (["--top-p", "0.9"], "--top-p shapes sampled answers"),
    (["--samples", "2", "--predict", "score"], "--samples draws generated answers"),
    (["--samples", "2", "--top-p", "1.5"], "hyper-parameter top_p: Input should be less than or equal to 1"),
    (["--samples", "2", "--set", "temperature=0"], "temperature 0 is greedy decoding"),
])
def test_bad_sampling_input_is_one_line_and_writes_nothing(tmp_path, tiny_llama, data_dir, cli, extra, message):
    code, _, err = cli(icl_args(tiny_llama, tmp_path / "exp", data_dir, *extra))
    assert code == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not (tmp_path / "exp").exists()


def test_sampling_flags_need_the_icl_runner(tmp_path, tiny_llama, cli):
    code, _, err = cli(["sweep", "--task", "sst2", "--model", str(tiny_llama), "--samples", "4", "--out",
                        str(tmp_path / "x")])
    assert code == 2 and "--samples is an in-context-learning option; add --runner icl" in err


def test_icl_flags_need_the_icl_runner_and_method_needs_finetuning(tmp_path, tiny_llama, data_dir, cli):
    code, _, err = cli(["sweep", "--task", "sst2", "--model", str(tiny_llama), "--shots", "2", "--out",
                        str(tmp_path / "x")])
    assert code == 2 and "--shots is an in-context-learning option; add --runner icl" in err
    code, _, err = cli([*icl_args(tiny_llama, tmp_path / "y", data_dir), "--method", "lora"])
    assert code == 2 and "with --runner icl nothing is trained" in err


@pytest.mark.slow
def test_an_icl_factor_study_with_the_real_smollm2(tmp_path, data_dir, cli, monkeypatch):
    """A random tiny model answers every prompt alike (its golden runs tie); the real SmolLM2 does not."""
    monkeypatch.setenv("SEEDSCOPE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "study"
    code, printed, err = cli(["factors", "run", "--runner", "icl", "--task", "sst2", "--model", "smollm2-135m-instruct",
                              "--factor", "sample_choice", "--factor", "sample_order", "-N", "2", "-M", "2", "-L", "3",
                              "--num-labelled", "40", "--shots", "1", "--prompt-format", "instruction",
                              "--set", "max_train_examples=200", "--set", "max_eval_examples=60",
                              "--out", str(out), "--data-dir", str(data_dir)])
    assert code == 0, err
    runs = ExperimentStore.open(out).runs()
    assert len(runs) == 3 + 2 * 2 * 2 and (runs["status"] == "done").all() and set(runs["method"]) == {"icl"}
    assert "sample_choice" in printed and "sample_order" in printed and "σ_GM" in printed


def test_an_icl_factor_study_refuses_fine_tuning_factors(tiny_llama, cli):
    code, _, err = cli(["factors", "run", "--runner", "icl", "--task", "sst2", "--model", str(tiny_llama),
                            "--factor", "data_order", "-N", "2", "-M", "2", "-L", "2", "--plan-only"])
    assert code == 2 and "the icl runner cannot vary 'data_order'" in err

