"""`seedscope sweep --runner icl --task lm-eval:…`: lm-evaluation-harness tasks as seed studies, end to end and refused cleanly."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from seedscope.store import ExperimentStore

sys.path.insert(0, str(Path(__file__).parents[1] / "runners" / "icl" / "fixtures" / "lm_eval_tasks"))
from write_tasks import write_tasks  # noqa: E402


@pytest.fixture(scope="module")
def task_dir(tmp_path_factory, data_dir: Path) -> Path:
    return write_tasks(tmp_path_factory.mktemp("lm-eval-tasks"), data_dir.resolve())


def sweep_args(task: str, model, out: Path, task_dir: Path, *more: str) -> list[str]:
    return ["sweep", "--runner", "icl", "--task", task, "--model", str(model), "--seeds", "3,4", "--shots", "2",
            "--lm-eval-include", str(task_dir), "--set", "max_eval_examples=6", "--out", str(out), *more]


@pytest.fixture(scope="module")
def lm_eval_store(tmp_path_factory, smollm2_folder, task_dir):
    """A 2-seed sweep of a group of two lm-eval tasks (multiple choice), made by the CLI."""
    from seedscope.cli import main

    out = tmp_path_factory.mktemp("stores") / "pair"
    try:
        main(sweep_args("lm-eval:local_pair", smollm2_folder, out, task_dir))
    except SystemExit as done:
        assert not done.code
    return out


def test_a_group_sweep_stores_every_task_and_seed(lm_eval_store):
    store = ExperimentStore.open(lm_eval_store)
    runs = store.runs()
    assert set(runs["task"]) == {"lm-eval:sst2_local", "lm-eval:copa_local"} and (runs["status"] == "done").all()
    assert len(runs) == 4 and set(runs["primary_metric"]) == {"accuracy"}
    predictions = store.predictions()
    assert set(predictions["example_id"]) == {str(i) for i in range(6)}
    metrics = runs["metrics"].iloc[0]
    assert {"acc,none", "accuracy"} <= set(metrics) and metrics["acc,none"] == pytest.approx(metrics["accuracy"])


def test_analyze_compare_and_show_prompt_read_the_store(lm_eval_store, tmp_path, cli):
    code, printed, err = cli(["analyze", str(lm_eval_store), "--task", "lm-eval:sst2_local",
                              "--json", str(tmp_path / "a.json")])
    assert code == 0, err
    assert json.loads((tmp_path / "a.json").read_text())
    code, printed, err = cli(["compare", str(lm_eval_store), str(lm_eval_store), "--names", "A", "--names", "B",
                              "--task", "lm-eval:copa_local"])
    assert code == 0, err
    run = ExperimentStore.open(lm_eval_store).runs()["run_id"].iloc[0]
    code, printed, err = cli(["show-prompt", str(lm_eval_store), "--run", run, "--example", "0"])
    assert code == 0 and "Answer:" in printed, err


def test_subsets_and_report_read_the_store(lm_eval_store, tmp_path, cli):
    code, printed, err = cli(["subsets", str(lm_eval_store), "--task", "lm-eval:copa_local", "--subset-size", "4", "--subset-seeds", "3",
                              "--n-boot", "50", "--json", str(tmp_path / "s.json")])
    assert code == 0, err
    subsets = json.loads((tmp_path / "s.json").read_text())
    assert subsets["pool_size"] == 6 and list(subsets["systems"]) == ["pair"]  # COPA's 6 documents, one store
    assert len(subsets["systems"]["pair"]["scores"]) == 3
    html = tmp_path / "report.html"
    code, printed, err = cli(["report", str(lm_eval_store), "--html", str(html), "--figures", str(tmp_path / "figs")])
    assert code == 0, err
    text = html.read_text()
    assert "lm-eval:sst2_local" in text and "lm-eval:copa_local" in text
    assert list((tmp_path / "figs").glob("*.png"))


def test_a_factor_study_varies_the_few_shot_seed(tmp_path, smollm2_folder, task_dir, cli):
    out = tmp_path / "study"
    code, printed, err = cli(["factors", "run", "--runner", "icl", "--task", "lm-eval:copa_local",
                              "--model", str(smollm2_folder), "--factor", "sample_choice", "-N", "2", "-M", "2",
                              "-L", "2", "--num-labelled", "50", "--shots", "1", "--lm-eval-include", str(task_dir),
                              "--set", "max_eval_examples=4", "--out", str(out)])
    assert code == 0, err
    runs = ExperimentStore.open(out).runs()
    assert (runs["status"] == "done").all() and len(runs) == 6
    assert "sample_choice" in printed


@pytest.mark.parametrize("task,message", [
    ("lm-eval:no_such_task_here", "unknown lm-eval task 'no_such_task_here'"),
    ("lm-eval:copa_rolling", "asks for loglikelihood_rolling requests, which seedscope does not score"),
    ("lm-eval:", "names no lm-eval task"),
])
def test_bad_tasks_are_one_line_and_exit_2(task, message, tmp_path, smollm2_folder, task_dir, cli):
    code, _, err = cli(sweep_args(task, smollm2_folder, tmp_path / "x", task_dir))
    assert code == 2 and message in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()


def test_a_hub_task_offline_names_its_dataset(tmp_path, smollm2_folder, task_dir, cli, monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    code, _, err = cli(sweep_args("lm-eval:sciq", smollm2_folder, tmp_path / "x", task_dir))
    assert code == 2 and "could not load its dataset allenai/sciq" in err and "offline" in err, err
    assert not (tmp_path / "x").exists()


def test_an_unsupported_lm_eval_version_is_refused(tmp_path, smollm2_folder, task_dir, cli, monkeypatch):
    from seedscope.tasks import lm_eval_tasks

    monkeypatch.setattr(lm_eval_tasks.metadata, "version", lambda name: "0.5.1")
    code, _, err = cli(sweep_args("lm-eval:sst2_local", smollm2_folder, tmp_path / "x", task_dir))
    assert code == 2 and "lm-eval 0.5.1 is installed, but seedscope reads lm-eval >=0.4.12,<0.5" in err, err


def test_lm_eval_tasks_need_the_icl_runner(tmp_path, smollm2_folder, task_dir, cli):
    code, _, err = cli(["sweep", "--task", "lm-eval:sst2_local", "--model", str(smollm2_folder), "--seeds", "1,2",
                        "--out", str(tmp_path / "x")])
    assert code == 2 and "lm-eval tasks are prompted, not trained: add --runner icl" in err
    code, _, err = cli(["sweep", "--task", "sst2", "--model", str(smollm2_folder), "--seeds", "1,2",
                        "--lm-eval-include", str(task_dir), "--out", str(tmp_path / "y")])
    assert code == 2 and "add --runner icl" in err


def test_scoring_options_of_seedscope_prompts_are_refused(tmp_path, smollm2_folder, task_dir, cli):
    code, _, err = cli([*sweep_args("lm-eval:sst2_local", smollm2_folder, tmp_path / "x", task_dir), "--predict", "generate"])
    assert code == 2 and "predict does not apply to an lm-eval task" in err, err
    code, _, err = cli([*sweep_args("lm-eval:sst2_local", smollm2_folder, tmp_path / "y", task_dir), "--prompt-format", "chat"])
    assert code == 2 and "an lm-eval task takes its template from the harness" in err, err
    code, _, err = cli([*sweep_args("lm-eval:sst2_local", smollm2_folder, tmp_path / "z", task_dir), "--samples", "4"])
    assert code == 2 and "samples does not apply to an lm-eval task: its generation_kwargs and repeats" in err, err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists() and not (tmp_path / "z").exists()
