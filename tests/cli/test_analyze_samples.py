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
    assert "sampling estimators" in capsys.readouterr().out


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


def test_compare_sample_tables(tmp_path):
    out = tmp_path / "compare.json"
    a, b = samples(tmp_path / "a.csv", 1), samples(tmp_path / "b.csv", 2, shift=0.3)
    assert run_cli(["compare", str(a), str(b), "--metric", "pass@2", "--json", str(out)]) == 0
    document = json.loads(out.read_text())
    pair = document["pairs"][0]
    assert document["estimator"] == "pass@2" and (pair["system_a"], pair["system_b"]) == ("a", "b")
    assert pair["difference"] < 0 and 0 <= pair["inversion_probability"] <= 0.5
    assert run_cli(["compare", str(a), str(b), "--metric", "pass@5", "--json", str(out)]) == 2
