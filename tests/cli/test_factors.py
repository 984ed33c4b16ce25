"""`seedscope factors analyze` and `simulate-adaptive`: outputs, and exit status 2 on bad input."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from seedscope.cli import main

S = [[80, 82, 84], [75, 79, 77], [85, 85, 88], [70, 74, 78]]
GM = [78, 82, 75, 88, 71, 80, 84, 77, 73, 86, 79, 81]


def worked_table(tmp_path, drop=None, golden=GM, name="scores.csv"):
    rows = [("golden", None, None, g / 100) for g in golden]
    rows += [("order", k + 1, j + 1, s / 100) for j, row in enumerate(S) for k, s in enumerate(row)]
    frame = pd.DataFrame(rows, columns=["experiment", "order", "run", "score"])
    if drop is not None:
        frame = frame.drop(index=drop)
    path = tmp_path / name
    frame.to_csv(path, index=False)
    return path


def fail(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    return " ".join(capsys.readouterr().err.split())


def test_analyze_writes_json_and_markdown(tmp_path, capsys):
    path = worked_table(tmp_path)
    out_json, out_md = tmp_path / "out" / "f.json", tmp_path / "f.md"
    main(["factors", "analyze", str(path), "--num-classes", "2", "--n-boot", "500", "--seed", "3",
          "--json", str(out_json), "--markdown", str(out_md)])
    printed = capsys.readouterr().out
    assert "order" in printed and "-0.535" in printed
    payload = json.loads(out_json.read_text())
    entry = payload["factors"]["order"]
    assert entry["c_std"] == pytest.approx(0.01986547, abs=1e-8)
    assert entry["m_std"] == pytest.approx(0.04602988, abs=1e-8)
    assert entry["golden_std"] == pytest.approx(0.04890467, abs=1e-8)
    assert entry["importance"] == pytest.approx(-0.535009, abs=1e-6)
    assert (entry["n_runs"], entry["n_groups"], entry["failed_count"]) == (12, 4, 0)
    assert entry["importance_ci_low"] < entry["importance"] < entry["importance_ci_high"]
    assert payload["settings"]["n_boot"] == 500 and payload["settings"]["seed"] == 3
    assert payload["golden"]["n_runs"] == 12
    markdown = out_md.read_text()
    assert markdown.count("| order |") == 2 and "-0.535" in markdown


def test_analyze_real_scores(tmp_path, data_dir, capsys):
    out = tmp_path / "cola.json"
    main(["factors", "analyze", str(data_dir / "factor-runs" / "cola_bert.csv"), "--num-classes", "2",
          "--n-boot", "1000", "--factor", "label", "--factor", "order", "--json", str(out)])
    factors = json.loads(out.read_text())["factors"]
    assert list(factors) == ["label", "order"]
    assert round(factors["label"]["importance"], 4) == 0.5713
    assert factors["order"]["failed_count"] == 144


def test_allow_missing_reports_the_ragged_example(tmp_path, capsys):
    path = worked_table(tmp_path, drop=len(GM) + 11)  # run (row 4, column 3)
    out = tmp_path / "r.json"
    main(["factors", "analyze", str(path), "--allow-missing", "--n-boot", "100", "--json", str(out)])
    assert "1 missing run" in capsys.readouterr().out
    entry = json.loads(out.read_text())["factors"]["order"]
    assert entry["importance"] == pytest.approx(-0.734458, abs=1e-6)
    assert entry["n_missing"] == 1 and entry["n_runs"] == 11


def test_simulate_adaptive_on_real_scores(tmp_path, data_dir, capsys):
    out = tmp_path / "adaptive.json"
    main(["factors", "simulate-adaptive", str(data_dir / "factor-runs" / "sst2_bert.csv"),
          "--tolerance", "0.05", "--repeats", "50", "--json", str(out)])
    assert "Adaptive run count, tolerance 0.05" in capsys.readouterr().out
    payload = json.loads(out.read_text())
    assert payload["schedule"]["tolerance"] == 0.05
    assert set(payload["factors"]) == {"split", "label", "initialisation", "order"}
    assert all(0 < f["saved_share"] < 1 for f in payload["factors"].values())


@pytest.mark.parametrize("command", [["analyze"], ["simulate-adaptive", "--start", "2"]])
@pytest.mark.parametrize("golden, message", [
    ([80] * len(GM), "all golden-model runs have the same score"),  # 0.8 each: a float std of 1e-17, not 0
    ([float("inf")] + GM[1:], "scores.csv line 2: score inf is not a plausible score"),  # refused as it is read
])
def test_golden_model_without_finite_spread(command, golden, message, tmp_path, capsys):
    path = worked_table(tmp_path, golden=golden)
    assert message in fail(["factors", command[0], str(path), *command[1:]], capsys)


def test_unknown_factor(tmp_path, capsys):
    message = fail(["factors", "analyze", str(worked_table(tmp_path)), "--factor", "label"], capsys)
    assert "unknown factor 'label'; this study has 'order'" in message


def test_ragged_group_without_allow_missing(tmp_path, capsys):
    path = worked_table(tmp_path, drop=len(GM) + 11)
    message = fail(["factors", "analyze", str(path)], capsys)
    assert "factor 'order' has 1 missing run(s) (first: group run=4, investigation run 3)" in message


def test_group_with_one_run(tmp_path, capsys):
    path = worked_table(tmp_path, drop=[len(GM) + 10, len(GM) + 11])
    message = fail(["factors", "analyze", str(path), "--allow-missing"], capsys)
    assert "group run=4 has 1 run(s), fewer than 2" in message


def test_mitigation_runs_below_two(tmp_path, capsys):
    path = worked_table(tmp_path, drop=list(range(len(GM) + 3, len(GM) + 12)))
    assert "(M ≥ 2)" in fail(["factors", "analyze", str(path)], capsys)


def test_investigation_runs_below_two(tmp_path, capsys):
    frame = pd.read_csv(worked_table(tmp_path))
    frame = frame[(frame["experiment"] == "golden") | (frame["order"] == 1)]
    frame.to_csv(tmp_path / "n1.csv", index=False)
    assert "(N ≥ 2)" in fail(["factors", "analyze", str(tmp_path / "n1.csv")], capsys)


def test_structurally_ragged_rows(tmp_path, capsys):
    frame = pd.read_csv(worked_table(tmp_path))
    frame.loc[len(GM), "run"] = None
    frame.to_csv(tmp_path / "ragged.csv", index=False)
    assert "experiment 'order' has ragged groups" in fail(["factors", "analyze", str(tmp_path / "ragged.csv")], capsys)


def test_missing_columns(tmp_path, capsys):
    frame = pd.read_csv(worked_table(tmp_path)).drop(columns="score")
    frame.to_csv(tmp_path / "noscore.csv", index=False)
    assert "no 'score' column" in fail(["factors", "analyze", str(tmp_path / "noscore.csv")], capsys)
    assert "no 'f1' column" in fail(["factors", "analyze", str(worked_table(tmp_path)), "--metric", "f1"], capsys)


@pytest.mark.parametrize("row, message", [
    (0, "inf.csv line 2: score inf is not a plausible score"),
    (len(GM), f"inf.csv line {len(GM) + 2}: score inf is not a plausible score"),
])
def test_infinite_score(row, message, tmp_path, capsys):
    frame = pd.read_csv(worked_table(tmp_path))
    frame.loc[row, "score"] = float("inf")
    frame.to_csv(tmp_path / "inf.csv", index=False)
    assert message in fail(["factors", "analyze", str(tmp_path / "inf.csv")], capsys)


def test_folder_that_is_not_a_store(tmp_path, capsys):
    message = fail(["factors", "analyze", str(tmp_path)], capsys)
    assert f"{tmp_path} is a folder but neither a score table nor an experiment directory (no catalog.sqlite)" in message


def test_row_without_experiment(tmp_path, capsys):
    frame = pd.read_csv(worked_table(tmp_path))
    frame.loc[len(GM) + 1, "experiment"] = None
    frame.to_csv(tmp_path / "unnamed.csv", index=False)
    message = fail(["factors", "analyze", str(tmp_path / "unnamed.csv")], capsys)
    assert f"unnamed.csv line {len(GM) + 3} has no 'experiment' (a factor's name, or 'golden')" in message


def test_output_name_too_long(tmp_path, capsys):
    name = tmp_path / ("f" * 300 + ".json")
    assert f"cannot write {name}: File name too long" in fail(["factors", "analyze", str(worked_table(tmp_path)),
                                                               "--json", str(name)], capsys)


def test_empty_table(tmp_path, capsys):
    (tmp_path / "empty.csv").write_text("experiment,order,run,score\n")
    assert "empty.csv has column names but no rows" in fail(["factors", "analyze", str(tmp_path / "empty.csv")], capsys)


def test_missing_file_and_bad_options(tmp_path, capsys):
    assert "does not exist" in fail(["factors", "analyze", str(tmp_path / "none.csv")], capsys)
    path = str(worked_table(tmp_path))
    assert "not both" in fail(["factors", "analyze", path, "--num-classes", "2", "--chance", "0"], capsys)
    assert "at least 2" in fail(["factors", "analyze", path, "--num-classes", "1"], capsys)
    assert "number of resamples must be at least 1, not 0" in fail(["factors", "analyze", path, "--n-boot", "0"], capsys)
    assert "tolerance must be positive" in fail(["factors", "simulate-adaptive", path, "--tolerance", "0"], capsys)
    assert "only 4 mitigation runs" in fail(["factors", "simulate-adaptive", path], capsys)


def test_nothing_written_on_error(tmp_path, capsys):
    out = tmp_path / "f.json"
    fail(["factors", "analyze", str(worked_table(tmp_path)), "--factor", "x", "--json", str(out)], capsys)
    assert not out.exists()


# ---- factors run ----------------------------------------------------------------------------

# a randomly initialised tiny model predicts one class, so its accuracy on a balanced split is constant:
# the CLI tests analyse the evaluation loss, which differs from run to run
TINY = ["--set", "max_train_examples=200", "--set", "max_eval_examples=40", "--set", "max_steps=2",
        "--set", "per_device_train_batch_size=4", "--num-labelled", "16", "--metric", "eval_loss"]


def run_args(model, data_dir, *extra):
    return ["factors", "run", "--task", "sst2", "--model", str(model), "--data-dir", str(data_dir), *TINY, *extra]


@pytest.mark.slow
def test_run_fine_tunes_the_plan_and_analyses_it(tmp_path, tiny_bert, data_dir, capsys):
    from seedscope.factor_study.plan import draw_seeds
    from seedscope.store import ExperimentStore

    out, result = tmp_path / "study", tmp_path / "result.json"
    main(run_args(tiny_bert, data_dir, "--factor", "data_order", "-N", "2", "-M", "2", "-L", "3",
                  "--out", str(out), "--json", str(result), "--n-boot", "100"))
    printed = " ".join(capsys.readouterr().out.split())
    assert "Factor importance (eval_loss" in printed and "7 runs done" in printed
    runs = ExperimentStore.open(out).runs()
    assert (runs["status"] == "done").all() and len(runs) == 3 + 2 * 2
    assert all(m["accuracy"] == 0.5 for m in runs["metrics"])  # balanced split, one-class tiny model
    study_runs = runs[runs["tag"].str.startswith("data_order")]
    assert set(study_runs["data_order"]) == set(draw_seeds(27, 2))  # investigation seeds, recorded per run
    assert set(study_runs["model_init"]) == set(draw_seeds(42, 3)[:2])  # mitigation seeds hold the rest
    payload = json.loads(result.read_text())
    entry = payload["factors"]["data_order"]
    assert (entry["n_runs"], entry["n_groups"], entry["n_configs"]) == (4, 2, 2)
    assert payload["golden"]["n_runs"] == 3 and payload["settings"]["metric"] == "eval_loss"
    assert payload["runs"]["data_order"]["runs_used"] == 4
    # the directory analyses like any score table, and resuming redoes nothing
    assert "all golden-model runs have the same score" in fail(["factors", "analyze", str(out)], capsys)
    main(["factors", "analyze", str(out), "--metric", "train_loss", "--n-boot", "50"])
    assert "Factor importance (train_loss" in capsys.readouterr().out
    # the seed-effect commands name the analysis that fits a factor study (every group is one run), writing nothing
    page = tmp_path / "report.html"
    for command in (["analyze", str(out)], ["report", str(out), "--html", str(page)]):
        assert f"its analysis is: seedscope factors analyze {out}" in " ".join(fail(command, capsys).split())
    assert not page.exists()
    main(run_args(tiny_bert, data_dir, "--factor", "data_order", "-N", "2", "-M", "2", "-L", "3",
                  "--out", str(out), "--resume", "--n-boot", "50"))
    capsys.readouterr()
    assert (ExperimentStore.open(out).runs()["attempts"] == 1).all()


@pytest.mark.slow
def test_plan_only_prints_size_and_estimate_and_stores_nothing(tmp_path, tiny_bert, data_dir, capsys):
    main(run_args(tiny_bert, data_dir, "--factor", "all", "-N", "3", "-M", "4", "--plan-only"))
    printed = " ".join(capsys.readouterr().out.split())
    assert "N = 3, M = 4, L = 12; 60 runs" in printed
    assert "example-epochs" in printed and "estimated wall time (this machine):" in printed  # the header may wrap
    assert "would pick: one after another" in printed
    assert not any(tmp_path.iterdir())


def test_run_executor_mistake_writes_nothing(tmp_path, capsys, monkeypatch):
    import seedscope.cli.factors_run as factors_run
    import seedscope.workflows.sweeping as sweep_module

    monkeypatch.setattr(sweep_module, "preflight", lambda specs, data_dir, execution=None: None)  # no model loading here
    monkeypatch.setattr(factors_run, "quiet_libraries", lambda: None)
    out = tmp_path / "out"
    argv = ["factors", "run", "--task", "sst2", "--model", "m", "--factor", "data_order", "-N", "2", "-M", "2",
            "--gpus-per-run", "1", "--out", str(out)]
    assert "--gpus-per-run is what each run asks of a cluster; it needs --executor ray or slurm" in fail(argv, capsys)
    assert not out.exists()


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--factor", "shuffle"], "unknown randomness factor 'shuffle'"),
        (["--factor", "sample_choice"], "the finetune runner cannot vary 'sample_choice'"),
        (["--factor", "optimisation"], "never investigated"),
        (["--factor", "data_order", "-N", "1"], "at least 2 investigation runs, not 1"),
        (["--factor", "data_order", "-M", "1"], "at least 2 mitigation runs, not 1"),
        (["--factor", "data_order", "-L", "1"], "at least 2 golden runs, not 1"),
        (["--factor", "data_order"], "no output directory"),
        (["--factor", "data_order", "--set", "learning_rate"], "--set takes KEY=VALUE"),
        (["--factor", "data_order", "--set", "lerning_rate=1"], "lerning_rate"),
        (["--factor", "data_order", "--tolerance", "0", "--out", "x"], "tolerance must be positive"),
        (["--factor", "data_order", "--executor", "ray", "--cpus-per-run", "0", "--out", "x"],
         "Invalid value for '--cpus-per-run': Input should be greater than or equal to 0.01"),
    ],
)
def test_run_bad_input(extra, message, tmp_path, capsys):
    argv = ["factors", "run", "--task", "sst2", "--model", "all-minilm-l6-v2", *extra]
    assert message in fail(argv, capsys)


def test_run_fuses_as_its_config_says_and_needs_the_group_size(tmp_path, tiny_bert, data_dir, capsys):
    from seedscope.store import ExperimentStore

    config, out = tmp_path / "study.yaml", tmp_path / "study"
    config.write_text("execution: fused\n")
    argv = run_args(tiny_bert, data_dir, "--factor", "data_order", "-N", "2", "-M", "2", "-L", "2", "--n-boot", "50",
                    "--config", str(config))
    assert "needs fuse: K" in " ".join(fail([*argv, "--out", str(out)], capsys).split()) and not out.exists()
    config.write_text("execution: fused\nfuse: 3\n")
    main([*argv, "--out", str(out)])
    capsys.readouterr()
    environment = ExperimentStore.open(out).environment()
    assert set(environment["execution"]) == {"fused"} and set(environment["fused_members"]) <= {1, 2, 3}
