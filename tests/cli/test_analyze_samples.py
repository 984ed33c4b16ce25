"""``seedscope analyze`` and ``seedscope compare`` on sample tables: the estimators' JSON, and bad input exits 2."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.cli import main


def run_cli(args: list[str]) -> int:
    try:
        main(args)
    except SystemExit as done:
        return int(done.code or 0)
    return 0


def samples(path: Path, seed: int = 0, n: int = 4, items: int = 12, shift: float = 0.0) -> Path:
    rng = np.random.default_rng(seed)
    rows = []
    for run in ("s1", "s2"):
        for item in range(items):
            for sample in range(n):
                right = rng.random() < min(1.0, item / items + shift)
                rows.append((run, f"q{item}", sample, int(right), "A" if right else str(rng.integers(1, 3))))
    pd.DataFrame(rows, columns=["run", "example_id", "sample", "correct", "prediction"]).to_csv(path, index=False)
    return path


def test_analyze_writes_the_estimator_families(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert run_cli(["analyze", str(samples(tmp_path / "s.csv")), "--k", "1,2,4", "--n-boot", "200",
                    "--json", str(out)]) == 0
    system = json.loads(out.read_text())["systems"]["samples"]
    assert list(system["pass@k"]) == ["1", "2", "4"] and list(system["pass^k"]) == ["1", "2", "4"]
    assert system["pass@k"]["1"] == pytest.approx(system["avg@n"])
    assert set(system["G-Pass@k"]["4"]) == {"0.25", "0.5", "0.75", "1"}
    printed = capsys.readouterr().out
    first = printed.split("\n")[0]  # the verdict first: pass@1 with its spread across the seeds, said unreliable at 2
    assert first.startswith("pass@1 ") and "across 2 sampling seed(s)" in " ".join(printed.split())
    assert "unreliable" in printed and "pass@k and maj@k over 2 sampling seed(s)" in printed
    assert "least stable items" not in printed  # the full tables come with --details
    assert run_cli(["analyze", str(samples(tmp_path / "s.csv")), "--k", "1,2,4", "--n-boot", "200", "--details"]) == 0
    printed = capsys.readouterr().out
    assert "sampling estimators" in printed and "least stable items" in printed


def test_default_ks_go_up_to_n(tmp_path):
    out = tmp_path / "out.json"
    assert run_cli(["analyze", str(samples(tmp_path / "s.csv", n=6)), "--n-boot", "100", "--json", str(out)]) == 0
    assert list(json.loads(out.read_text())["systems"]["samples"]["pass@k"]) == ["1", "2", "5", "6"]


def test_k_beyond_n_is_one_line_exit_2_and_nothing_written(tmp_path, capsys):
    out = tmp_path / "out.json"
    assert run_cli(["analyze", str(samples(tmp_path / "s.csv")), "--k", "1,8", "--json", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "k = 8 is more than the samples per item (n = 4)" in error
    assert not out.exists()


def test_uneven_items_are_a_note(tmp_path, capsys):
    path = samples(tmp_path / "s.csv")
    table = pd.read_csv(path)
    table[~((table["example_id"] == "q0") & (table["sample"] == 3))].to_csv(path, index=False)
    assert run_cli(["analyze", str(path), "--k", "1,2", "--n-boot", "100"]) == 0
    assert "different numbers of samples (n = 3 … 4)" in capsys.readouterr().out


def test_k_on_predictions_is_a_note(tmp_path, capsys):
    paths = []
    for seed in (1, 2):
        path = tmp_path / f"seed{seed}.csv"
        pd.DataFrame({"example_id": range(6), "prediction": [seed % 2, 1, 0, 1, 0, 1], "label": [1, 1, 0, 1, 0, 0]}).to_csv(
            path, index=False)
        paths.append(str(path))
    assert run_cli(["analyze", *paths, "--k", "2", "--n-boot", "100"]) == 0
    assert "--k does not apply" in capsys.readouterr().out


def test_compare_sample_tables(tmp_path, capsys):
    out = tmp_path / "compare.json"
    a, b = samples(tmp_path / "a.csv", 1), samples(tmp_path / "b.csv", 2, shift=0.3)
    assert run_cli(["compare", str(a), str(b), "--metric", "pass@2", "--n-boot", "100", "--json", str(out)]) == 0
    assert "--n-boot does not apply to sample tables" in capsys.readouterr().out
    document = json.loads(out.read_text())
    pair = document["pairs"][0]
    assert document["estimator"] == "pass@2" and (pair["system_a"], pair["system_b"]) == ("a", "b")
    assert pair["difference"] < 0 and 0 <= pair["inversion_probability"] <= 0.5
    assert run_cli(["compare", str(a), str(b), "--metric", "pass@5", "--json", str(out)]) == 2


FIXTURES = Path(__file__).resolve().parents[1] / "io" / "fixtures"


def test_framework_logs_get_the_sample_analysis_when_asked(tmp_path):
    """An inspect_ai log of --epochs 4 (written by inspect_ai) read as samples with --k: pass@k per log, the
    interval over items inside [0, 1]; without --k its epochs stay runs of the seed-effect analysis."""
    log = FIXTURES / "inspect_ai" / "sampled-arith.eval"
    out = tmp_path / "out.json"
    assert run_cli(["analyze", str(log), "--k", "1,2,4", "--n-boot", "200", "--json", str(out)]) == 0
    (system,) = json.loads(out.read_text())["systems"].values()  # one system: the log's model
    assert list(system["pass@k"]) == ["1", "2", "4"]
    assert system["pass@k"]["1"] <= system["pass@k"]["2"] <= system["pass@k"]["4"] <= 1.0
    errors = system["standard_errors"]  # estimator → mean, se, ci_low, ci_high
    assert errors and all(0.0 <= row["ci_low"] <= row["mean"] <= row["ci_high"] <= 1.0 for row in errors.values())
    seeds = tmp_path / "seeds.json"
    assert run_cli(["analyze", str(log), "--json", str(seeds)]) == 0
    assert "systems" not in json.loads(seeds.read_text())
