"""``seedscope analyze``: outputs on real files, and every bad input ends with exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from seedscope.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_cli(args: list[str]) -> int:
    """Exit status of the console script on ``args`` (0 when it returns normally)."""
    try:
        main(["analyze", *args])
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def figure1_files(folder: Path) -> list[str]:
    """Two runs at 60 % accuracy that agree on only 2 of 10 examples (paper Figure 1)."""
    gold = [1] * 10
    runs = {"seed_42": [1] * 6 + [0] * 4, "seed_52": [0] * 4 + [1] * 6}
    paths = []
    for name, pred in runs.items():
        frame = pd.DataFrame({"example_id": range(10), "prediction": pred, "label": gold})
        path = folder / f"{name}.csv"
        frame.to_csv(path, index=False)
        paths.append(str(path))
    return paths


def test_all_outputs_on_figure1(tmp_path, capsys):
    out = tmp_path / "out"
    args = figure1_files(tmp_path) + [
        "--json", str(out / "r.json"), "--markdown", str(out / "r.md"),
        "--latex", str(out / "r.tex"), "--csv", str(out / "r.csv"), "--n-boot", "200",
    ]
    assert run_cli(args) == 0
    terminal = capsys.readouterr().out
    assert "CON" in terminal and "0.2000" in terminal and "0.6000" in terminal
    result = json.loads((out / "r.json").read_text())
    assert result["units"] == "fraction"
    assert result["metrics"]["accuracy"]["mean"] == pytest.approx(0.6)
    assert result["micro"]["con"] == pytest.approx(0.2) and result["micro"]["ccon"] == pytest.approx(0.2)
    assert result["micro"]["n_pairs"] == 1 and result["runs"] == ["seed_42", "seed_52"]
    assert "| CON | 0.2000 |" in (out / "r.md").read_text()
    assert "\\toprule" in (out / "r.tex").read_text()
    long = pd.read_csv(out / "r.csv")
    con = long[(long["section"] == "micro") & (long["statistic"] == "con")]["value"].item()
    assert con == pytest.approx(0.2)


def test_error_bars_clusters_and_degenerate_runs_on_the_terminal_and_in_json(tmp_path, capsys):
    """MultiRC-style: answers of one question share a cluster; one run predicts a single class."""
    gold = [1, 0, 1, 1, 0, 1, 0, 0, 1, 1]
    runs = {"s1": gold, "s2": [1, 1, 0, 1, 0, 0, 0, 0, 1, 0], "s3": [1] * 10}
    paths = []
    for name, pred in runs.items():
        frame = pd.DataFrame({"idx": range(10), "pred": pred, "gold": gold, "question": [i // 2 for i in range(10)]})
        paths.append(str(tmp_path / f"{name}.csv"))
        frame.to_csv(paths[-1], index=False)
    out = tmp_path / "r.json"
    assert run_cli(paths + ["--cluster-column", "question", "--json", str(out), "--n-boot", "100", "--details"]) == 0
    terminal = " ".join(capsys.readouterr().out.split())
    assert "Error bars over examples" in terminal and "SE (clustered)" in terminal
    assert "Degenerate runs (2 of 3)" in terminal and "predicts one class only" in terminal
    result = json.loads(out.read_text())
    assert result["error_bars"]["s2"]["se"] == pytest.approx(0.163299, abs=1e-6)  # 6 of 10 right
    assert set(result["error_bars"]["s1"]) == {"accuracy", "se", "se_clustered"}
    assert result["variance_split"]["dominant"] in ("seeds", "examples")
    assert result["degenerate_runs"] == {  # s2 scores the majority-class rate 0.6
        "s3": "predicts one class only", "s2": "accuracy 0.6000 at or below the baseline 0.6000"}


def test_example_predictions_and_multi_task_summary(tmp_path, capsys):
    rte = sorted(str(p) for p in (EXAMPLES / "rte").glob("*.csv"))
    assert run_cli(rte + ["--top", "3", "--n-boot", "100", "--details"]) == 0
    assert "Most unstable examples (top 3;" in capsys.readouterr().out
    # cb.csv carries a task column; with a second task the summary tables appear
    cb = pd.read_csv(EXAMPLES / "cb.csv")
    both = pd.concat([cb, cb.assign(task="wic")])
    path = tmp_path / "two_tasks.csv"
    both.to_csv(path, index=False)
    assert run_cli([str(path), "--json", str(tmp_path / "s.json"), "--n-boot", "100", "--details"]) == 0
    assert "Table 7 layout" in capsys.readouterr().out
    result = json.loads((tmp_path / "s.json").read_text())
    assert [g["task"] for g in result["groups"]] == ["cb", "wic"]
    assert result["groups"][0]["micro"]["prob_con"] is not None
    assert set(result["summary"]["table1"]) == {"cb", "wic"}


def test_regression_and_intersect(tmp_path):
    a = write(tmp_path / "a.csv", "example_id,prediction,label\n1,0.5,0.4\n2,1.5,1.7\n3,2.5,2.2\n4,3.1,3.3\n")
    b = write(tmp_path / "b.csv", "example_id,prediction,label\n1,0.7,0.4\n2,1.2,1.7\n3,2.9,2.2\n")
    out = tmp_path / "r.json"
    assert run_cli([a, b, "--intersect", "--task-type", "regression", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["task_type"] == "regression" and result["micro"]["n_dropped"] == 1
    assert result["micro"]["n_examples"] == 3 and set(result["metrics"]) == {"pearson", "spearman"}


def test_unstable_examples_show_the_task_text(tmp_path, data_dir):
    paths = figure1_files(tmp_path)
    out = tmp_path / "r.json"
    assert run_cli(paths + ["--task", "rte", "--data-dir", str(data_dir), "--json", str(out), "--n-boot", "50"]) == 0
    top = json.loads(out.read_text())["most_unstable"][0]
    assert top["example_id"] == "0" and top["text"].startswith("Dana Reeve")


def test_help_teaches_with_examples(capsys):
    assert run_cli(["--help"]) == 0
    text = capsys.readouterr().out
    assert "seedscope analyze" in text and "--intersect" in text and "--json" in text


BAD_INPUTS = {
    # name: (files {name: content} or None for "missing", extra args, message fragment)
    "missing file": ({}, ["nothing.csv"], "does not exist"),
    "empty file": ({"a.csv": "", "b.csv": "example_id,prediction\n1,x\n"}, [], "empty"),
    "header only": ({"a.csv": "example_id,prediction\n", "b.csv": "example_id,prediction\n1,x\n"}, [], "no rows"),
    "unknown column": ({"a.csv": "example_id,prediction\n1,x\n", "b.csv": "example_id,prediction\n1,x\n"}, ["--id-column", "idx"], "idx"),
    "duplicate id": ({"a.csv": "example_id,prediction\n1,x\n1,y\n", "b.csv": "example_id,prediction\n1,x\n"}, [], "1"),
    "different ids": (
        {"a.csv": "example_id,prediction\n1,x\n2,x\n", "b.csv": "example_id,prediction\n1,x\n3,y\n"},
        [],
        "run a lacks 1 (e.g. 3); run b lacks 1 (e.g. 2)",
    ),
    "one run": ({"a.csv": "example_id,prediction,label\n1,x,x\n2,y,x\n"}, [], "at least two"),
    "NaN regression value": (
        {"a.csv": "example_id,prediction,label\n1,0.5,1.5\n2,nan,2.5\n", "b.csv": "example_id,prediction,label\n1,0.5,1.5\n2,0.7,2.5\n"},
        ["--task-type", "regression"],
        "line 3",
    ),
    "non-numeric regression value": (
        {"a.csv": "example_id,prediction,label\n1,0.5,1.5\n2,high,2.5\n", "b.csv": "example_id,prediction,label\n1,0.5,1.5\n2,0.7,2.5\n"},
        ["--task-type", "regression"],
        "not a number",
    ),
    "probabilities not summing to one": (
        {
            "a.csv": "example_id,prediction,prob_x,prob_y\n1,x,0.9,0.3\n",
            "b.csv": "example_id,prediction,prob_x,prob_y\n1,x,0.9,0.1\n",
        },
        [],
        "sum to 1.2000, not 1",
    ),
    "one task of several has one run": (
        {"all.csv": "task,run,example_id,prediction,label\nrte,1,1,0,0\nrte,2,1,1,0\ncb,1,1,0,0\n"},
        [],
        "task cb: micro metrics (CON, CCON) compare pairs of runs, but only 1 run was given",
    ),
    "unknown cluster column": (
        {"a.csv": "example_id,prediction,label\n1,x,x\n", "b.csv": "example_id,prediction,label\n1,y,x\n"},
        ["--cluster-column", "question"],
        "no column 'question'",
    ),
    "empty cluster": (
        {"a.csv": "example_id,prediction,label,q\n1,x,x,\n2,x,x,1\n", "b.csv": "example_id,prediction,label,q\n1,y,x,1\n2,x,x,1\n"},
        ["--cluster-column", "q"],
        "a.csv line 2: the cluster is empty",
    ),
    "power out of range": (
        {"a.csv": "example_id,prediction,label\n1,x,x\n", "b.csv": "example_id,prediction,label\n1,y,x\n"},
        ["--power", "1"],
        "power must lie strictly between 0 and 1",
    ),
    "unknown --runs-by": (
        {"a.csv": "example_id,prediction,label\n1,x,x\n", "b.csv": "example_id,prediction,label\n1,y,x\n"},
        ["--runs-by", "folder"],
        "--runs-by takes 'file'",
    ),
    "unknown primary metric": (
        {"a.csv": "example_id,prediction,label\n1,x,x\n", "b.csv": "example_id,prediction,label\n1,y,x\n"},
        ["--metric", "bleu"],
        "unknown metric 'bleu' for a classification task; choose one of accuracy",
    ),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
def test_bad_input_exits_2_with_one_message_and_writes_nothing(case, tmp_path, capsys, monkeypatch):
    files, extra, fragment = BAD_INPUTS[case]
    monkeypatch.chdir(tmp_path)
    paths = [write(tmp_path / name, text) for name, text in files.items()]
    outputs = ["--json", "o.json", "--markdown", "o.md", "--latex", "o.tex", "--csv", "o.csv"]
    assert run_cli(paths + extra + outputs) == 2
    err = capsys.readouterr().err
    assert "error:" in err and fragment in " ".join(err.split()) and "Traceback" not in err
    assert not any(Path(name).exists() for name in ("o.json", "o.md", "o.tex", "o.csv"))
    assert not list(tmp_path.glob(".o.*"))  # no temporary file left behind


def test_output_that_is_a_folder_is_refused(tmp_path, capsys):
    assert run_cli(figure1_files(tmp_path) + ["--json", str(tmp_path)]) == 2
    assert "is a folder" in capsys.readouterr().err


def test_same_file_for_two_outputs_is_refused(tmp_path, capsys):
    target = str(tmp_path / "x.txt")
    assert run_cli(figure1_files(tmp_path) + ["--json", target, "--csv", target]) == 2
    assert "same file" in capsys.readouterr().err
    assert not Path(target).exists()


def test_bad_option_value_exits_2(tmp_path, capsys):
    assert run_cli(figure1_files(tmp_path) + ["--task-type", "generation"]) == 2
    assert "'generation' is not one of 'classification', 'regression'" in capsys.readouterr().err
    assert run_cli(figure1_files(tmp_path) + ["--confidence", "1.5"]) == 2  # one check for every command
    assert "confidence must lie strictly between 0 and 1, not 1.5" in capsys.readouterr().err
    assert run_cli(figure1_files(tmp_path) + ["--confidence", "1"]) == 2
    assert "confidence must lie strictly between 0 and 1, not 1.0" in capsys.readouterr().err
    assert run_cli(figure1_files(tmp_path) + ["--seed", "-1"]) == 2  # numpy's Generator takes no negative seed
    assert "Invalid value for '--seed'" in capsys.readouterr().err


def test_a_store_group_with_a_single_run_is_left_out_and_named(tmp_path, synthetic_predictions, capsys):
    from seedscope.plan import plan_to_dict, seed_sweep
    from seedscope.store import ExperimentStore

    table = synthetic_predictions(tasks=("rte", "sst2"), n_seeds=3, n_examples=40)
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["rte", "sst2"], ["models/minilm"],
                                                                             [42, 52, 62])))
    for run in store.runs().itertuples():
        if run.task == "sst2" and run.seed != 42:
            continue  # sst2's other runs stay pending: one finished run
        rows = table[(table["task"] == run.task) & (table["run"] == str(run.seed))]
        store.mark_running(run.run_id)
        store.record_success(run.run_id, rows.drop(columns="task"), {"accuracy": 0.5}, {}, {"total_s": 1.0})
    out = tmp_path / "a.json"
    assert run_cli([str(store.path), "--n-boot", "50", "--json", str(out)]) == 0
    printed = " ".join(capsys.readouterr().out.split())
    assert ("note: 1 group(s) with a single finished run left out (a seed effect compares two runs or more): "
            "sst2 / minilm") in printed
    assert json.loads(out.read_text())["micro"]["n_runs"] == 3  # rte alone, analysed
    assert run_cli([str(tmp_path / "exp"), "--task", "sst2"]) == 2
    assert "holds a single finished run (task sst2, model minilm" in capsys.readouterr().err
