"""``seedscope report``: every output from a store or prediction files, and exit 2 with one clear
message and nothing written for every bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.subsets import analyze_subsets
from seedscope.analysis.summary import summarize_tasks
from seedscope.cli import main
from seedscope.store import ExperimentStore

TASKS, SEEDS = ("rte", "mrpc", "cola"), (42, 52, 62)


@pytest.fixture(scope="module")
def predictions(synthetic_predictions) -> pd.DataFrame:
    return synthetic_predictions(TASKS, n_seeds=len(SEEDS), n_examples=150, seed=11)


@pytest.fixture(scope="module")
def store(tmp_path_factory, predictions, synthetic_store) -> Path:
    path = tmp_path_factory.mktemp("cli") / "sweep"
    synthetic_store(path, predictions, {"torch": "2.13.0", "device": "cpu", "deterministic": True})
    return path


def _seed_files(predictions: pd.DataFrame, folder: Path, task: str = "rte") -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for run, rows in predictions[predictions["task"] == task].groupby("run"):
        path = folder / f"seed{run}.csv"
        rows.drop(columns=["task", "run"]).to_csv(path, index=False)
        paths.append(str(path))
    return paths


def _files(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*")}


def test_every_output_from_a_store(store, tmp_path, capsys):
    out = tmp_path / "out"
    main(["report", str(store), "--html", str(out / "r.html"), "--tables", str(out / "tables"),
          "--figures", str(out / "figs"), "--fig-format", "pdf", "--unstable-csv", str(out / "u.csv"), "--top", "5"])
    assert "wrote HTML report" in capsys.readouterr().out
    html = (out / "r.html").read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and "Run environment" in html and "2.13.0" in html
    assert "Error bars over examples" in html and "comes from the seeds" in html and "Variance of accuracy" in html
    tex = (out / "tables" / "tables.tex").read_text(encoding="utf-8")
    assert r"\toprule" in tex and r"\bottomrule" in tex and tex.count(r"\begin{table}") == 3
    figs = sorted(p.name for p in (out / "figs").iterdir())
    assert "seed-task-heatmap.pdf" in figs and "rte-con-matrix.pdf" in figs and len(figs) == 2 + 4 * len(TASKS)
    assert all((out / "figs" / name).read_bytes().startswith(b"%PDF") for name in figs)
    unstable = pd.read_csv(out / "u.csv")
    assert unstable.groupby("task").size().to_dict() == {t: 5 for t in TASKS}
    # golden: the CSV of Table 1 holds the analysis API's numbers
    expected = summarize_tasks(ExperimentStore.open(store).predictions())
    table1 = pd.read_csv(out / "tables" / "table1.csv", index_col=0)
    assert list(table1.columns) == list(expected.table1.columns) and len(table1) == len(expected.table1) == 4
    pd.testing.assert_frame_equal(table1.reset_index(drop=True), expected.table1.reset_index(drop=True), rtol=1e-15)
    assert not [p for p in out.rglob("*.tmp")]


def test_prediction_files_with_text_and_default_output(predictions, tmp_path, monkeypatch, data_dir, capsys):
    paths = _seed_files(predictions, tmp_path / "preds")
    monkeypatch.chdir(tmp_path)
    main(["report", *paths, "--task", "rte", "--data-dir", str(data_dir)])
    html = (tmp_path / "seedscope-report.html").read_text(encoding="utf-8")
    assert "Task rte" in html and "No run environment was recorded" in html
    assert "Friedman" not in html  # one task: no seed × task test
    assert "wrote HTML report: seedscope-report.html" in capsys.readouterr().out


def _subset_score_files(folder: Path, n_examples: int = 120) -> list[str]:
    """Two systems' per-example scores (example_id, score), B a little better than A."""
    rng = np.random.default_rng(5)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, shift in (("circuitA", 0.0), ("circuitB", 0.1)):
        path = folder / f"{name}.csv"
        scores = np.clip(rng.normal(0.5 + shift, 0.2, n_examples), 0, 1)
        pd.DataFrame({"example_id": np.arange(n_examples), "score": scores}).to_csv(path, index=False)
        paths.append(str(path))
    return paths


def test_subset_section_from_score_files(store, tmp_path, capsys):
    paths = _subset_score_files(tmp_path / "scores")
    out = tmp_path / "out"
    main(["report", str(store), "--html", str(out / "r.html"), "--figures", str(out / "figs"),
          "--subset-scores", paths[0], "--subset-scores", paths[1], "--subset-size", "30", "--subset-seeds", "8"])
    html = (out / "r.html").read_text(encoding="utf-8")
    assert "<h2>Evaluation-subset seeds</h2>" in html
    assert "Score mean on 8 random subsets of 30 of the 120 examples" in html
    assert 'id="fig-subset-cv"' in html and 'id="fig-subset-deltas"' in html
    assert {"subset-cv.png", "subset-deltas.png"} <= {p.name for p in (out / "figs").iterdir()}
    # the numbers are those of `seedscope subsets`: the same reader and analysis
    expected = analyze_subsets(
        pd.concat([pd.read_csv(p).assign(system=Path(p).stem) for p in paths]), subset_size=30, n_seeds=8, full_pool=False
    )
    for system, cv in expected.summary["cv"].items():
        assert f"{cv:.4f}" in html, system


def test_subset_section_from_one_long_table(store, tmp_path):
    paths = _subset_score_files(tmp_path / "scores")
    long = tmp_path / "all.csv"
    table = pd.concat([pd.read_csv(p).assign(system=Path(p).stem) for p in paths]).rename(columns={"score": "faith"})
    table.to_csv(long, index=False)
    main(["report", str(store), "--html", str(tmp_path / "r.html"), "--subset-scores", str(long),
          "--subset-size", "40", "--subset-score", "mean:faith"])
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Score mean:faith on 20 random subsets of 40 of the 120 examples" in html
    assert "circuitA" in html and "circuitB" in html and 'id="fig-subset-deltas"' in html


def test_help_teaches_with_examples(capsys):
    main(["report", "--help"])
    text = capsys.readouterr().out
    assert "seedscope report <sweep>/ --tables" in text and "--unstable-csv" in text
    assert "--subset-scores <a>.csv" in text and "--subset-size" in text


def _fails(args: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as done:
        main(args)
    assert done.value.code == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    return " ".join(captured.err.split())


def test_missing_input(tmp_path, capsys):
    err = _fails(["report", str(tmp_path / "nope"), "--html", str(tmp_path / "r.html")], capsys)
    assert "nope" in err
    assert _files(tmp_path) == set()


def test_fig_format_without_figures(store, tmp_path, capsys):
    err = _fails(["report", str(store), "--fig-format", "pdf", "--html", str(tmp_path / "r.html")], capsys)
    assert "--fig-format needs --figures DIR" in err
    assert _files(tmp_path) == set()


def test_bad_fig_format(store, tmp_path, capsys):
    err = _fails(["report", str(store), "--figures", str(tmp_path / "f"), "--fig-format", "jpg"], capsys)
    assert "jpg" in err
    assert _files(tmp_path) == set()


def test_one_run_only(predictions, tmp_path, capsys):
    paths = _seed_files(predictions, tmp_path / "preds")[:1]
    err = _fails(["report", *paths, "--html", str(tmp_path / "r.html")], capsys)
    assert "at least two seeds" in err
    assert not (tmp_path / "r.html").exists()


def test_mismatched_example_ids(predictions, tmp_path, capsys):
    paths = _seed_files(predictions, tmp_path / "preds")
    short = pd.read_csv(paths[0]).iloc[:-3]
    short.to_csv(paths[0], index=False)
    err = _fails(["report", *paths, "--html", str(tmp_path / "r.html")], capsys)
    assert "cover different example ids" in err
    assert not (tmp_path / "r.html").exists()


def test_output_that_is_a_directory(store, tmp_path, capsys):
    (tmp_path / "taken").mkdir()
    err = _fails(["report", str(store), "--html", str(tmp_path / "taken")], capsys)
    assert "is a directory" in err
    assert _files(tmp_path) == {"taken"}


@pytest.mark.parametrize("option", ["--html", "--unstable-csv", "--tables", "--figures"])
def test_output_inside_a_file(option, store, tmp_path, capsys):
    (tmp_path / "afile").write_text("a file, not a folder")
    err = _fails(["report", str(store), option, str(tmp_path / "afile" / "out")], capsys)
    assert f"cannot write {tmp_path / 'afile' / 'out'}: {tmp_path / 'afile'} is a file, not a directory" in err
    assert _files(tmp_path) == {"afile"}


def test_output_name_too_long(store, tmp_path, capsys):
    name = "r" * 300 + ".html"
    err = _fails(["report", str(store), "--html", str(tmp_path / name)], capsys)
    assert f"cannot write {tmp_path / name}: File name too long" in err
    assert _files(tmp_path) == set()


def test_nothing_half_written_when_a_later_output_fails(store, tmp_path, capsys):
    """The HTML is requested first, the figures folder is a file: neither is written, no temp left."""
    (tmp_path / "figs").write_text("a file, not a folder")
    err = _fails(["report", str(store), "--html", str(tmp_path / "r.html"), "--tables", str(tmp_path / "tables"),
                  "--figures", str(tmp_path / "figs")], capsys)
    assert "figs exists and is not a directory" in err
    assert _files(tmp_path) == {"figs"}


def test_bad_factor_scores(store, tmp_path, capsys):
    bad = tmp_path / "scores.csv"
    bad.write_text("experiment,score\ngolden,0.5\n")
    err = _fails(["report", str(store), "--factor-scores", str(bad), "--html", str(tmp_path / "r.html")], capsys)
    assert "the golden model needs at least 2 runs, not 1" in err
    assert _files(tmp_path) == {"scores.csv"}


def test_subset_scores_without_subset_size(store, tmp_path, capsys):
    paths = _subset_score_files(tmp_path / "scores")
    err = _fails(["report", str(store), "--subset-scores", paths[0], "--html", str(tmp_path / "r.html")], capsys)
    assert "--subset-scores needs --subset-size N, the number of examples in each subset" in err
    assert not (tmp_path / "r.html").exists()


def test_subset_size_without_subset_scores(store, tmp_path, capsys):
    err = _fails(["report", str(store), "--subset-size", "30", "--html", str(tmp_path / "r.html")], capsys)
    assert "--subset-size needs --subset-scores FILE to say which scores to draw the subsets from" in err
    assert _files(tmp_path) == set()


def test_subset_size_larger_than_the_pool(store, tmp_path, capsys):
    paths = _subset_score_files(tmp_path / "scores")
    err = _fails(["report", str(store), "--subset-scores", paths[0], "--subset-scores", paths[1],
                  "--subset-size", "500", "--html", str(tmp_path / "r.html")], capsys)
    assert "the subset size 500 is larger than the pool of 120 examples" in err
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(("options", "message"), [
    (["--subset-size", "0"], "the subset size must be at least 1, not 0"),
    (["--subset-size", "30", "--subset-seeds", "1"], "--subset-seeds must be at least 2 to measure a seed variance, not 1"),
    (["--subset-size", "30", "--subset-score", "median"], "unknown score 'median'"),
])
def test_bad_subset_options(options, message, store, tmp_path, capsys):
    paths = _subset_score_files(tmp_path / "scores")
    err = _fails(["report", str(store), "--subset-scores", paths[0], *options, "--html", str(tmp_path / "r.html")], capsys)
    assert message in err
    assert not (tmp_path / "r.html").exists()


def test_a_store_group_with_a_single_run_is_left_out_and_named(tmp_path, synthetic_predictions, capsys):
    from seedscope.plan import plan_to_dict, seed_sweep

    table = synthetic_predictions(tasks=("rte", "sst2"), n_seeds=3, n_examples=40)
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["rte", "sst2"], ["models/minilm"],
                                                                             [42, 52, 62])))
    for run in store.runs().itertuples():
        if run.task == "sst2" and run.seed != 42:
            continue  # sst2's other runs stay pending: one finished run
        rows = table[(table["task"] == run.task) & (table["run"] == str(run.seed))]
        store.mark_running(run.run_id)
        store.record_success(run.run_id, rows.drop(columns="task"), {"accuracy": 0.5}, {}, {"total_s": 1.0})
    main(["report", str(store.path), "--html", str(tmp_path / "r.html")])
    printed = " ".join(capsys.readouterr().out.split())
    assert "note: 1 group(s) with a single finished run left out" in printed and "sst2 / minilm" in printed
    assert (tmp_path / "r.html").is_file()
