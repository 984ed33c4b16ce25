"""Per-run score tables through analyze, compare and report, and their bad inputs (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy import stats


SPREADSHEET = (
    "\ufeffmodel_name,dataset_name,learning_rate,seed,set_type,acc\r"
    "bert-base,rte,2e-05,1,dev,0.7004\rbert-base,rte,2e-05,2,dev,0.6715\rbert-base,rte,2e-05,3,dev,0.6931\r"
    "bert-base,rte,2e-05,4,dev,0.6823\rbert-base,rte,2e-05,5,dev,0.7112\r"
    "roberta-base,rte,2e-05,1,dev,0.7834\rroberta-base,rte,2e-05,2,dev,0.7617\rroberta-base,rte,2e-05,3,dev,0.7906\r"
    "roberta-base,rte,2e-05,4,dev,0.7726\rroberta-base,rte,2e-05,5,dev,0.7978\r"
    ",,,,,\r\rMean,,,,,0.7365\rMinimum,,,,,0.6715\rMaximum,,,,,0.7978\rStandard deviation,,,,,0.0480\r"
)
BERT = [0.7004, 0.6715, 0.6931, 0.6823, 0.7112]
ROBERTA = [0.7834, 0.7617, 0.7906, 0.7726, 0.7978]


@pytest.fixture
def spreadsheet(tmp_path) -> Path:
    path = tmp_path / "paper_seeds.csv"
    path.write_bytes(SPREADSHEET.encode("utf-8"))
    return path


def test_analyze_gives_the_macro_part_and_says_the_micro_part_needs_predictions(spreadsheet, tmp_path, cli):
    out = tmp_path / "a.json"
    code, stdout, _ = cli(["analyze", str(spreadsheet), "--json", str(out), "--n-boot", "500"])
    assert code == 0
    terminal = " ".join(stdout.split())
    assert terminal.startswith("rte / bert-base: acc: mean 0.6917, VAR ±0.0138 over 5 runs")  # the verdict first
    assert "rte / bert-base: spread over 5 runs" in terminal and "t CI" not in terminal
    code, stdout, _ = cli(["analyze", str(spreadsheet), "--n-boot", "500", "--details"])
    terminal = " ".join(stdout.split())
    assert "rte / bert-base: spread across 5 runs" in terminal and "t CI" in terminal and "IQM CI" in terminal
    assert "Mean (line 14), Minimum (line 15), Maximum (line 16), Standard deviation (line 17)" in terminal
    assert "CON / CCON" in terminal and "need per-example predictions" in terminal
    document = json.loads(out.read_text())
    bert = document["groups"][0]
    assert (bert["task"], bert["system"], bert["runs"]) == ("rte", "bert-base", ["1", "2", "3", "4", "5"])
    acc = bert["metrics"]["acc"]
    assert acc["mean"] == pytest.approx(sum(BERT) / 5) and acc["std_sample"] == pytest.approx(stats.tstd(BERT))
    assert (acc["t_low"], acc["t_high"]) == pytest.approx(stats.t.interval(0.95, 4, loc=sum(BERT) / 5, scale=stats.sem(BERT)))
    assert acc["iqm"] == pytest.approx(stats.trim_mean(BERT, 0.25))
    assert document["paired_runs"] is True


def test_compare_reads_one_file_holding_both_systems_with_matched_seeds(spreadsheet, tmp_path, cli):
    out = tmp_path / "c.json"
    code, stdout, _ = cli(["compare", str(spreadsheet), "--run-column", "seed", "--json", str(out), "--n-boot", "500",
                           "--n-permutations", "999"])
    assert code == 0
    terminal = " ".join(stdout.split())
    assert "per-example tests (joint seed × example bootstrap, McNemar) need per-example predictions" in terminal
    document = json.loads(out.read_text())
    assert document["metric"] == "acc" and set(document["systems"]) == {"bert-base", "roberta-base"}
    pair = document["pairs"][0]
    assert pair["paired"] is True and pair["n_matched"] == 5
    assert pair["delta"] == pytest.approx((sum(BERT) - sum(ROBERTA)) / 5)
    assert pair["p_wilcoxon"] == pytest.approx(stats.wilcoxon(BERT, ROBERTA).pvalue)
    assert pair["p_permutation"] == pytest.approx(2 / 32)  # exact: every seed favours roberta
    assert pair["prob_improvement"] == 0.0 and "roberta-base almost stochastically dominates" in pair["aso_verdict"]
    assert pair["p_joint"] is None and pair["mcnemar"] == []
    assert document["systems"]["roberta-base"]["iqm_ci_low"] <= document["systems"]["roberta-base"]["iqm"]


def test_compare_of_a_wide_table_without_run_column_is_unpaired(tmp_path, cli):
    path = tmp_path / "wide.csv"
    path.write_text("bert,roberta\n" + "".join(f"{a},{b}\n" for a, b in zip(BERT, ROBERTA)))
    out = tmp_path / "c.json"
    assert cli(["compare", str(path), "--json", str(out), "--n-boot", "300"])[0] == 0
    pair = json.loads(out.read_text())["pairs"][0]
    assert pair["paired"] is False and pair["p_wilcoxon"] is None and pair["p_permutation"] is None


def test_report_of_score_tables(spreadsheet, tmp_path, cli):
    html, figures = tmp_path / "r.html", tmp_path / "figs"
    assert cli(["report", str(spreadsheet), "--html", str(html), "--figures", str(figures)])[0] == 0
    page = html.read_text()
    assert "rte / bert-base" in page and "Comparison on acc" in page and "need per-example predictions" in page
    assert "Standard deviation (line 17)" in page
    assert sorted(p.name for p in figures.iterdir()) == ["scores-1.png", "scores-2.png"]


BAD = {
    "one system": ("seed,acc\n1,0.7\n2,0.8\n", ["compare"], "a comparison needs two or more systems"),
    "several tasks": ("task,model,seed,acc\nrte,A,1,0.6\nrte,A,2,0.7\ncb,A,1,0.8\ncb,A,2,0.9\nrte,B,1,0.6\nrte,B,2,0.7\n"
                      "cb,B,1,0.8\ncb,B,2,0.9\n", ["compare"], "several tasks (rte, cb); pick one with --task"),
    "several metrics": ("model,seed,acc,f1\nA,1,0.6,0.5\nA,2,0.7,0.6\nB,1,0.6,0.5\nB,2,0.7,0.6\n", ["compare"],
                        "several metrics (acc, f1); pick one with --metric"),
    "one run": ("model,acc\nA,0.6\nB,0.7\n", ["analyze"], "A has one run"),
    "unknown metric column": ("seed,acc\n1,0.7\n2,0.8\n", ["analyze", "--metric", "bleu"], "no column 'bleu'"),
    "unknown system column": ("seed,acc\n1,0.7\n2,0.8\n", ["analyze", "--system-column", "model"], "no column 'model'"),
    "text score": ("seed,acc\n1,0.7\n2,n/a\n", ["analyze"], "line 3: score acc is missing (empty, NA or n/a)"),
    "factors with scores": ("seed,acc\n1,0.7\n2,0.8\n", ["report", "--unstable-csv", "u.csv"], "need predictions"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_score_tables_exit_2_with_one_message(case, tmp_path, cli, monkeypatch):
    text, command, message = BAD[case]
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.csv"
    path.write_text(text)
    code, _, stderr = cli([command[0], str(path), *command[1:], "--json" if command[0] != "report" else "--html",
                           "out.json"])
    assert code == 2
    err = " ".join(stderr.split())
    assert "error:" in err and message in err and "Traceback" not in err
    assert not (tmp_path / "out.json").exists()


def test_the_reported_failures_now_work_from_the_command_line(tmp_path, cli):
    t = tmp_path / "t.csv"
    t.write_text("run,model,acc,f1\nrun 1,A,0.8,0.7\nrun 2,A,0.82,0.71\nrun 3,A,0.79,0.69\n"
                 "run 1,B,0.85,0.75\nrun 2,B,0.86,0.74\nrun 3,B,0.84,0.76\n")
    code, printed, err = cli(["compare", str(t), "--metric", "acc", "--run-column", "run", "--n-boot", "200"])
    assert code == 0, err
    assert "systems told apart by model" in printed


@pytest.mark.parametrize("command", ["analyze", "compare", "report"])
def test_an_option_out_of_range_is_refused_on_the_score_table_path(tmp_path, cli, command, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "s.csv"
    path.write_text("model,seed,acc\nA,1,0.7\nA,2,0.72\nB,1,0.6\nB,2,0.62\n")
    args = {"analyze": ["--power", "1.5"], "compare": ["--power", "1.5"], "report": ["--scale", "-1"]}[command]
    code, _, err = cli([command, str(path), *args])
    assert code == 2 and "Traceback" not in err
    assert ("--power must lie strictly between 0 and 1" if command != "report" else "--scale must be a positive") in err


def test_options_the_input_cannot_use_are_said_not_swallowed(tmp_path, cli):
    path = tmp_path / "s.csv"
    path.write_text("seed,acc\n1,0.7\n2,0.72\n3,0.71\n")
    code, printed, _ = cli(["analyze", str(path), "--metric", "acc", "--power", "0.9", "--top", "3"])
    assert code == 0
    assert "--power does not apply to per-run score tables" in printed and "--top does not apply" in printed
    predictions = Path(__file__).resolve().parents[2] / "examples" / "rte"
    code, printed, _ = cli(["analyze", str(predictions / "seed_42.csv"), str(predictions / "seed_52.csv"),
                            "--scale", "0.01", "--system-column", "model"])
    assert code == 0 and "--scale does not apply to per-example predictions" in printed
    assert "--system-column does not apply to per-example predictions" in printed
