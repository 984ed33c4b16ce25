"""``seedscope subsets`` and ``seedscope compare``: outputs on real files; every bad input ends with exit 2."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run_cli(args: list[str]) -> int:
    """Exit status of the console script on ``args`` (0 when it returns normally)."""
    try:
        main(args)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def score_files(folder: Path, n: int = 60) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    for name, shift in (("circuitA", 0.0), ("circuitB", 0.2)):
        path = folder / f"{name}.csv"
        pd.DataFrame({"example_id": range(n), "score": rng.random(n) + shift}).to_csv(path, index=False)
        paths.append(str(path))
    return paths


def test_subsets_all_outputs(tmp_path, capsys):
    out = tmp_path / "out"
    args = ["subsets", *score_files(tmp_path), "--subset-size", "20", "--subset-seeds", "6", "--target-cv", "0.05",
            "--n-boot", "200", "--n-permutations", "200",
            "--json", str(out / "s.json"), "--markdown", str(out / "s.md"), "--latex", str(out / "s.tex"), "--csv", str(out / "s.csv")]
    assert run_cli(args) == 0
    terminal = capsys.readouterr().out
    assert terminal.startswith("circuitA: on 6 random subsets of 20 of the 60 examples")  # the verdict first
    assert "seed-robust" in terminal and "Subset seed variance" not in terminal and "Per-seed scores" not in terminal
    assert run_cli(args[:9] + ["--details"]) == 0
    terminal = capsys.readouterr().out
    assert "Subset seed variance" in terminal and "circuitA − circuitB" in terminal and "Per-seed scores" in terminal
    document = json.loads((out / "s.json").read_text())
    assert document["subset_size"] == 20 and document["pool_size"] == 60 and document["seeds"] == [0, 1, 2, 3, 4, 5]
    system = document["systems"]["circuitA"]
    assert len(system["scores"]) == 6
    assert system["var_seed"] == pytest.approx(np.var(system["scores"], ddof=1))
    assert system["cv"] == pytest.approx(system["std"] / abs(system["mean"]))
    assert system["band"] in ("negligible", "moderate", "high") and system["advice"]
    assert set(system["full_pool"]) == {"score", "ci_low", "ci_high"} and system["needed_subset_size"] is not None
    pair = document["pairs"][0]
    assert (pair["system_a"], pair["system_b"]) == ("circuitA", "circuitB")
    assert pair["deltas"] == pytest.approx(np.subtract(system["scores"], document["systems"]["circuitB"]["scores"]).tolist())
    assert isinstance(pair["seed_robust"], bool) and 0.5 <= pair["sign_consistency"] <= 1
    assert set(pair["full_pool"]) == {"delta", "ci_low", "ci_high", "p_value", "p_holm", "p_bonferroni"}
    assert "| circuitA |" in (out / "s.md").read_text()
    assert r"\toprule" in (out / "s.tex").read_text() and (out / "s.tex").read_text().isascii()
    tidy = pd.read_csv(out / "s.csv")
    assert list(tidy.columns) == ["section", "name", "statistic", "value"]


def test_subsets_same_seed_same_json(tmp_path):
    files = score_files(tmp_path)
    outputs = []
    for run in range(2):
        path = tmp_path / f"r{run}.json"
        assert run_cli(["subsets", *files, "--subset-size", "10", "--subset-seeds", "5", "--seed", "3", "--n-boot", "100",
                        "--n-permutations", "100", "--json", str(path)]) == 0
        outputs.append(json.loads(path.read_text()))
    assert outputs[0] == outputs[1]


def test_subsets_long_parquet_with_ratio_and_accuracy(tmp_path):
    rng = np.random.default_rng(1)
    n = 40
    long = pd.DataFrame({
        "system": np.repeat(["x", "y"], n),
        "idx": np.tile(np.arange(n), 2),
        "circuit": rng.random(2 * n),
        "empty": rng.random(2 * n) * 0.1,
        "model": 1 + rng.random(2 * n),
        "prediction": rng.integers(0, 2, 2 * n),
        "label": np.tile(rng.integers(0, 2, n), 2),
    })
    path = tmp_path / "all.parquet"
    long.to_parquet(path)
    out = tmp_path / "ratio.json"
    assert run_cli(["subsets", str(path), "--subset-size", "10", "--subset-seeds", "4", "--subset-score", "ratio:circuit,empty,model",
                    "--no-full-pool", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert set(document["systems"]) == {"x", "y"} and document["score"] == "ratio:circuit,empty,model"
    x = long[long["system"] == "x"].sort_values("idx", key=lambda s: s.astype(str))
    first = np.random.default_rng(0).choice(n, 10, replace=False)
    sub = x.iloc[first]
    expected = (sub["circuit"].mean() - sub["empty"].mean()) / (sub["model"].mean() - sub["empty"].mean())
    assert document["systems"]["x"]["scores"][0] == pytest.approx(expected)
    accuracy = tmp_path / "acc.json"
    assert run_cli(["subsets", str(path), "--subset-size", "10", "--subset-seeds", "4", "--subset-score", "accuracy", "--no-full-pool", "--json", str(accuracy)]) == 0
    assert all(0 <= v <= 1 for v in json.loads(accuracy.read_text())["systems"]["y"]["scores"])


def bad(tmp_path: Path, capsys, args: list[str], message: str) -> None:
    target = tmp_path / "never.json"
    assert run_cli([*args, "--json", str(target)]) == 2
    assert message in capsys.readouterr().err.replace("\n", " ")
    assert not target.exists()


def test_subsets_bad_input_exits_2(tmp_path, capsys):
    files = score_files(tmp_path, n=30)
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "31"], "larger than the pool of 30")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--subset-seeds", "1"], "at least 2 subset seeds")
    other = tmp_path / "other.csv"
    pd.DataFrame({"example_id": range(1, 31), "score": np.ones(30)}).to_csv(other, index=False)
    bad(tmp_path, capsys, ["subsets", files[0], str(other), "--subset-size", "5"], "different example ids")
    nan = tmp_path / "nan.csv"
    pd.DataFrame({"example_id": range(30), "score": [np.nan] + [0.5] * 29}).to_csv(nan, index=False)
    bad(tmp_path, capsys, ["subsets", str(nan), "--subset-size", "5"], "nan.csv line 2: score is missing")
    zero = tmp_path / "zero.csv"
    pd.DataFrame({"example_id": range(4), "c": [0.3] * 4, "e": [0.2] * 4, "m": [0.2] * 4}).to_csv(zero, index=False)
    bad(tmp_path, capsys, ["subsets", str(zero), "--subset-size", "2", "--subset-score", "ratio:c,e,m"], "denominator is zero")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--subset-score", "median"], "unknown score")
    bad(tmp_path, capsys, ["subsets", str(tmp_path / "missing.csv"), "--subset-size", "5"], "does not exist")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--target-cv", "0.05", "--sizes", "5,x"], "--sizes")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--n-boot", "0"], "at least 1")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--confidence", "1.5"], "strictly between 0 and 1")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--target-cv", "0"], "target CV must be positive")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--target-cv", "nan"], "target CV must be positive, not nan")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--target-cv", "0.05", "--sizes", ","], "--sizes takes comma-separated")


def test_subsets_file_without_the_score_column_is_named(tmp_path, capsys):
    files = score_files(tmp_path, n=30)
    other = tmp_path / "renamed.csv"
    pd.DataFrame({"example_id": range(30), "value": np.ones(30)}).to_csv(other, index=False)
    bad(tmp_path, capsys, ["subsets", files[0], str(other), "--subset-size", "5"], "renamed.csv: no column score for the score")
    bad(tmp_path, capsys, ["subsets", str(other), "--subset-size", "5", "--subset-score", "ratio:value,a,b"], "no column a, b for the score")


def test_subsets_sizes_without_target_cv_is_refused(tmp_path, capsys):
    files = score_files(tmp_path, n=30)
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--sizes", "5,10"], "give --target-cv too")


def test_negative_seed_and_zero_permutations_are_refused(tmp_path, capsys):
    files = score_files(tmp_path, n=30)
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--seed", "-1"], "Invalid value for '--seed'")
    bad(tmp_path, capsys, ["subsets", *files, "--subset-size", "5", "--n-permutations", "0"], "number of resamples must be at least 1, not 0")
    base = sweep(tmp_path, "base", 0.0, 0)
    better = sweep(tmp_path, "better", 0.3, 1)
    bad(tmp_path, capsys, ["compare", str(base), str(better), "--seed", "-1"], "Invalid value for '--seed'")
    capsys.readouterr()
    assert run_cli(["compare", str(base), str(better), "--confidence", "1"]) == 2
    assert capsys.readouterr().err.strip() == "error: confidence must lie strictly between 0 and 1, not 1.0"


def sweep(folder: Path, name: str, flip: float, seed: int) -> Path:
    """A copy of the example RTE sweep where a share of wrong predictions is corrected."""
    target = folder / name
    shutil.copytree(EXAMPLES / "rte", target)
    rng = np.random.default_rng(seed)
    for path in target.glob("*.csv"):
        frame = pd.read_csv(path)
        fix = rng.random(len(frame)) < flip
        frame.loc[fix, "prediction"] = frame.loc[fix, "label"]
        frame.to_csv(path, index=False)
    return target


def test_compare_two_sweeps(tmp_path, capsys):
    base = sweep(tmp_path, "base", 0.0, 0)
    better = sweep(tmp_path, "better", 0.3, 1)
    out = tmp_path / "c.json"
    md = tmp_path / "c.md"
    assert run_cli(["compare", str(base), str(better), "--n-boot", "300", "--json", str(out), "--markdown", str(md)]) == 0
    terminal = " ".join(capsys.readouterr().out.split())
    assert terminal.startswith("better is ahead of base on accuracy by") and "the order survives the seed" in terminal
    assert "Expected maximum" not in terminal and "Systems on accuracy" in terminal
    assert run_cli(["compare", str(base), str(better), "--n-boot", "300", "--details"]) == 0
    terminal = capsys.readouterr().out
    assert "Expected maximum" in terminal and "McNemar" in terminal
    document = json.loads(out.read_text())
    assert document["metric"] == "accuracy"
    assert set(document["systems"]) == {"base", "better"}
    assert len(document["systems"]["base"]["scores"]) == 5
    pair = document["pairs"][0]
    assert pair["paired"] and pair["n_matched"] == 5 and pair["delta"] < 0
    assert pair["p_permutation"] == pytest.approx(2 / 32)  # every matched seed improves: exact two-sided p
    assert len(pair["mcnemar"]) == 5 and all(t["b"] == 0 for t in pair["mcnemar"])
    assert "### Systems on accuracy" in md.read_text()


def test_compare_bad_input_exits_2(tmp_path, capsys):
    base = sweep(tmp_path, "base", 0.0, 0)
    bad(tmp_path, capsys, ["compare", str(base)], "at least two sweeps")
    bad(tmp_path, capsys, ["compare", str(base), str(base)], "the same input is given twice")
    bad(tmp_path, capsys, ["compare", str(base), str(base), "--names", "x", "--names", "y", "--metric", "bleu"], "unknown metric 'bleu' for sweep x")
    constant = tmp_path / "constant.csv"  # run 1 predicts one value for every example: no Pearson
    constant.write_text("run,example_id,prediction,label\n1,1,0.1,0.2\n1,2,0.1,0.3\n1,3,0.1,0.9\n"
                        "2,1,0.3,0.2\n2,2,0.2,0.3\n2,3,0.9,0.9\n")
    varied = tmp_path / "varied.csv"
    varied.write_text("run,example_id,prediction,label\n1,1,0.1,0.2\n1,2,0.5,0.3\n1,3,0.2,0.9\n"
                      "2,1,0.3,0.2\n2,2,0.2,0.3\n2,3,0.9,0.9\n")
    bad(tmp_path, capsys, ["compare", str(varied), str(constant)], "sweep constant: pearson is undefined for run(s) 1")
    empty = tmp_path / "empty"
    empty.mkdir()
    bad(tmp_path, capsys, ["compare", str(base), str(empty)], "holds no experiment store and no prediction files")


def make_store(path: Path, flip: float, seed: int) -> Path:
    """A real experiment store of the example RTE sweep (seeds 42 … 82), optionally improved."""
    from seedscope.plan import plan_to_dict, seed_sweep
    from seedscope.store import ExperimentStore

    seeds = [42, 52, 62, 72, 82]
    store = ExperimentStore.create(path, plan_to_dict(seed_sweep(["rte"], ["models/minilm"], seeds)))
    rng = np.random.default_rng(seed)
    for run in store.runs().itertuples():
        frame = pd.read_csv(EXAMPLES / "rte" / f"seed_{int(run.seed)}.csv")
        fix = rng.random(len(frame)) < flip
        frame.loc[fix, "prediction"] = frame.loc[fix, "label"]
        store.mark_running(run.run_id)
        store.record_success(run.run_id, frame.assign(run=str(run.seed)), {"accuracy": 0.0}, {}, {"total_s": 1.0})
    return path


def test_compare_experiment_stores_matches_seeds(tmp_path):
    first = make_store(tmp_path / "base", 0.0, 0)
    second = make_store(tmp_path / "tuned", 0.2, 1)
    out = tmp_path / "stores.json"
    assert run_cli(["compare", str(first), str(second), "--n-boot", "200", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    assert set(document["systems"]["base"]["scores"]) == {"42", "52", "62", "72", "82"}
    pair = document["pairs"][0]
    assert pair["paired"] and pair["n_matched"] == 5 and pair["delta"] <= 0
    assert [t["run"] for t in pair["mcnemar"]] == ["42", "52", "62", "72", "82"]


def _lm_eval_log(folder: Path, predicted: list[int], gold: list[int]) -> Path:
    """A model's lm-eval output folder: one v0.4.7-style samples file of a two-choice task."""
    folder.mkdir(parents=True)
    lines = []
    for doc_id, (choice, target) in enumerate(zip(predicted, gold)):
        lls = [["-0.5", "False"], ["-2.0", "False"]] if choice == 0 else [["-2.0", "False"], ["-0.5", "False"]]
        lines.append(json.dumps({"doc_id": doc_id, "target": target, "resps": [[ll] for ll in lls],
                                 "filtered_resps": lls, "filter": "none", "metrics": ["acc"]}))
    (folder / "samples_boolq_2025-01-31T12-34-56.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_two_models_lm_eval_logs_go_straight_in(tmp_path):
    rng = np.random.default_rng(0)
    gold = rng.integers(0, 2, 120).tolist()
    good = [g if rng.random() < 0.8 else 1 - g for g in gold]
    weak = [g if rng.random() < 0.6 else 1 - g for g in gold]
    a, b = _lm_eval_log(tmp_path / "pythia-410m", good, gold), _lm_eval_log(tmp_path / "pythia-160m", weak, gold)
    out = tmp_path / "s.json"
    assert run_cli(["subsets", str(a), str(b), "--subset-size", "40", "--subset-seeds", "5", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    correct = np.array(good) == np.array(gold)
    ids = sorted(str(i) for i in range(120))  # the pool: ids sorted as text
    by_id = dict(zip(map(str, range(120)), correct))
    for k in range(5):
        subset = np.random.default_rng(k).choice(120, 40, replace=False)
        expected = np.mean([by_id[ids[i]] for i in subset])
        assert result["systems"]["pythia-410m"]["scores"][k] == pytest.approx(expected)


def test_several_runs_of_a_system_score_the_share_of_runs_right(tmp_path):
    rows = []
    for system, runs in {"A": {"s1": [1, 1, 0, 0], "s2": [1, 0, 0, 0]}, "B": {"s1": [0, 0, 0, 0], "s2": [1, 1, 1, 1]}}.items():
        for run, predictions in runs.items():
            rows += [{"run": run, "example_id": i, "prediction": p, "label": 1} for i, p in enumerate(predictions)]
        pd.DataFrame(rows).to_csv(tmp_path / f"{system}.csv", index=False)
        rows = []
    out = tmp_path / "s.json"
    args = ["subsets", str(tmp_path / "A.csv"), str(tmp_path / "B.csv"), "--subset-size", "4", "--subset-seeds", "2", "--json", str(out)]
    assert run_cli(args) == 0
    result = json.loads(out.read_text())
    assert result["systems"]["A"]["scores"] == pytest.approx([3 / 8, 3 / 8])  # the whole pool: (2 + 1) / 8
    assert result["systems"]["B"]["scores"] == pytest.approx([0.5, 0.5])


def test_predictions_without_labels_are_refused(tmp_path, capsys):
    for name in ("A", "B"):
        pd.DataFrame({"example_id": range(4), "prediction": [1, 0, 1, 0]}).to_csv(tmp_path / f"{name}.csv", index=False)
    assert run_cli(["subsets", str(tmp_path / "A.csv"), str(tmp_path / "B.csv"), "--subset-size", "2"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "system A: per-example correctness needs class predictions with a gold label" in err
