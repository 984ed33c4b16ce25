"""Numbers a careful paper would print, from the command line: runs of two tasks are refused in one line, no interval
leaves its metric's range, fewer than three runs are said to be unreliable, and a target only the whole pool reaches
is unreachable."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("command", [["compare"], ["subsets", "--subset-size", "50"]])
def test_runs_of_two_tasks_are_refused_in_one_line_naming_both(command, tmp_path, cli):
    out = tmp_path / "c.json"
    code, printed, err = cli([command[0], str(EXAMPLES / "rte"), str(EXAMPLES / "cb.csv"), *command[1:],
                              "--json", str(out)])
    assert code == 2 and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    flat = " ".join(err.split())
    assert flat.startswith("error: rte and cb are not runs of one task: their gold labels differ")
    assert not out.exists()



def test_a_sweep_holding_two_tasks_is_compared_on_the_one_named(tmp_path, cli):
    import shutil

    other = tmp_path / "other"  # the demo's store again: SST-2 and STS-B, five seeds
    shutil.copytree(EXAMPLES / "demo-store", other)
    out = tmp_path / "c.json"
    code, printed, err = cli(["compare", str(EXAMPLES / "demo-store"), str(other), "--json", str(out)])
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert " ".join(err.split()) == f"error: {EXAMPLES / 'demo-store'} holds several tasks (sst2, stsb); pick one with --task"
    assert not out.exists()
    code, printed, err = cli(["compare", str(EXAMPLES / "demo-store"), str(other), "--task", "sst2", "--n-boot", "200",
                              "--n-permutations", "99", "--json", str(out)])
    assert code == 0, err
    assert json.loads(out.read_text())["pairs"][0]["delta"] == 0  # the same runs

def test_two_runs_give_intervals_in_range_said_unreliable(tmp_path, cli):
    runs = [str(EXAMPLES / "rte" / name) for name in ("seed_42.csv", "seed_52.csv")]  # accuracy 0.76 and 0.70
    out = tmp_path / "a.json"
    code, printed, err = cli(["analyze", *runs, "--n-boot", "200", "--json", str(out)])
    assert code == 0, err
    metrics = json.loads(out.read_text())["metrics"]
    assert metrics["accuracy"]["t_high"] == 1.0 and metrics["accuracy"]["t_clipped"] is True
    assert metrics["accuracy"]["t_low"] == pytest.approx(0.3488, abs=1e-4)  # the rest of the number as it was
    assert all(-1 <= row[key] <= 1 for row in metrics.values() for key in ("ci_low", "ci_high", "t_low", "t_high"))
    flat = " ".join(printed.split())
    assert "with 2 runs the spread and every interval are unreliable" in flat
    assert "note: the t interval of accuracy over 2 runs ran past its range and is clipped to [0, 1]" in flat


def test_compare_of_two_runs_says_the_seeds_needed_are_projected(tmp_path, cli):
    two = tmp_path / "two"
    two.mkdir()
    for name in ("seed_42.csv", "seed_52.csv"):
        (two / name).write_bytes((EXAMPLES / "rte" / name).read_bytes())
    out = tmp_path / "c.json"
    code, printed, err = cli(["compare", str(two), str(EXAMPLES / "rte"), "--n-boot", "200", "--n-permutations", "99",
                              "--json", str(out)])
    assert code == 0, err
    document = json.loads(out.read_text())
    system = document["systems"]["two"]
    assert system["t_clipped"] is True and system["t_high"] <= 1.0
    assert [row["extrapolated"] for row in system["seeds_needed"]] == [row["n_seeds"] > 2 for row in system["seeds_needed"]]
    flat = " ".join(printed.split())
    assert "two has 2 runs: its intervals, the tests of its pairs and its seeds-needed curve rest on too few runs" in flat


def test_a_target_cv_only_the_whole_pool_reaches_is_unreachable(tmp_path, cli):
    rng = np.random.default_rng(0)
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.csv"
        pd.DataFrame({"example_id": range(200), "score": (rng.random(200) < 0.7).astype(float)}).to_csv(path, index=False)
        paths.append(str(path))
    out = tmp_path / "s.json"
    code, printed, err = cli(["subsets", *paths, "--subset-size", "50", "--subset-seeds", "8", "--target-cv", "0.02",
                              "--no-full-pool", "--json", str(out)])
    assert code == 0, err
    system = json.loads(out.read_text())["systems"]["a"]
    assert system["needed_subset_size"] is None and system["target_cv_reachable"] is False
    assert "a: no subset smaller than the pool brings the CV below 0.02 (unreachable" in " ".join(printed.split())
