"""Every analysis command starts with its verdict in words, then one compact table that fits 80 columns when piped;
--details prints every table, and the files always hold every table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _better(tmp_path: Path) -> Path:
    """The shipped RTE runs with a share of each run's wrong answers made right: a second, better system."""
    rng = np.random.default_rng(1)
    folder = tmp_path / "better"
    if folder.is_dir():
        return folder
    folder.mkdir()
    for path in sorted((EXAMPLES / "rte").glob("*.csv")):
        frame = pd.read_csv(path)
        fix = rng.random(len(frame)) < 0.15
        frame.loc[fix, "prediction"] = frame.loc[fix, "label"]
        frame.to_csv(folder / path.name, index=False)
    return folder


def _scores(tmp_path: Path) -> list[str]:
    rng = np.random.default_rng(0)
    paths = []
    for name, p in (("circuitA", 0.6), ("circuitB", 0.8)):
        path = tmp_path / f"{name}.csv"
        pd.DataFrame({"example_id": range(120), "score": (rng.random(120) < p).astype(float)}).to_csv(path, index=False)
        paths.append(str(path))
    return paths


def _factor_scores(tmp_path: Path) -> str:
    rows = [{"experiment": "golden", "score": 0.8 + 0.01 * np.sin(i)} for i in range(40)]
    rows += [{"experiment": "order", "order": i, "run": g, "score": 0.8 + 0.03 * np.cos(i * 2.1 + g)}
             for g in range(1, 11) for i in range(1, 6)]
    path = tmp_path / "factors.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return str(path)


def _two_tasks(tmp_path: Path) -> str:
    """One long table of two tasks: the shipped CB runs and the shipped RTE runs."""
    rte = [pd.read_csv(path).assign(task="rte", run=path.stem) for path in sorted((EXAMPLES / "rte").glob("*.csv"))]
    path = tmp_path / "two-tasks.csv"
    pd.concat([pd.read_csv(EXAMPLES / "cb.csv"), *rte], ignore_index=True).to_csv(path, index=False)
    return str(path)


def commands(tmp_path: Path) -> dict[str, list[str]]:
    rte = sorted(str(p) for p in (EXAMPLES / "rte").glob("*.csv"))
    better = _better(tmp_path)
    return {
        "analyze": ["analyze", *rte, "--n-boot", "200"],
        "analyze multi-task": ["analyze", _two_tasks(tmp_path), "--n-boot", "200"],
        "compare": ["compare", str(EXAMPLES / "rte"), str(better), "--names", "base", "--names", "better",
                    "--n-boot", "200", "--n-permutations", "99"],
        "subsets": ["subsets", *_scores(tmp_path), "--subset-size", "40", "--subset-seeds", "6", "--n-boot", "200",
                    "--n-permutations", "99"],
        "factors analyze": ["factors", "analyze", _factor_scores(tmp_path), "--n-boot", "200"],
    }


FIRST_WORDS = {
    "analyze": "predictions: accuracy varies by ±0.0264 across 5 seeds",
    "compare": "better is ahead of base on accuracy by",
    "subsets": "circuitA: on 6 random subsets of 40 of the 120 examples the score moves by std",
    "factors analyze": "The factor that matters most is order.",
}


@pytest.mark.parametrize("name", ["analyze", "compare", "subsets", "factors analyze"])
def test_the_verdict_comes_first_and_the_default_tables_fit_80_columns(name, tmp_path, cli):
    code, printed, err = cli(commands(tmp_path)[name])
    assert code == 0, err
    assert " ".join(printed.split()).startswith(FIRST_WORDS[name])
    lines = printed.splitlines()
    first_table = next(i for i, line in enumerate(lines) if line.startswith(("┏", "┌")))
    assert first_table > 1 and not any(line.startswith(("┏", "┃", "│")) for line in lines[:first_table - 2])
    assert max(len(line) for line in lines) <= 80
    headers = {cell.strip() for line in lines if line.startswith("┃") for cell in line.split("┃")[1:-1]}
    assert {cell for cell in headers if re.fullmatch(r"[a-z]+(_[a-z]+)+", cell)} <= {"example_id"}  # words, not names
    assert "True" not in printed and "False" not in printed


@pytest.mark.parametrize("name", ["analyze", "compare", "subsets", "factors analyze"])
def test_details_prints_every_table_and_the_files_hold_them_anyway(name, tmp_path, cli):
    args = commands(tmp_path)[name]
    code, compact, _ = cli([*args, "--json", str(tmp_path / "short.json")])
    code_details, details, _ = cli([*args, "--details", "--json", str(tmp_path / "long.json")])
    assert code == code_details == 0
    assert details.count("┏") + details.count("┌") > compact.count("┏") + compact.count("┌")
    assert json.loads((tmp_path / "short.json").read_text()) == json.loads((tmp_path / "long.json").read_text())


def test_several_tasks_give_one_sentence_each_and_the_papers_table_1(tmp_path, cli):
    code, printed, err = cli(commands(tmp_path)["analyze multi-task"])
    assert code == 0, err
    flat = " ".join(printed.split())
    assert flat.startswith("cb: accuracy varies by") and "Table 1 layout" in flat


def test_ids_of_unstable_examples_are_listed_in_natural_order(cli):
    code, printed, _ = cli(["analyze", *sorted(str(p) for p in (EXAMPLES / "rte").glob("*.csv")), "--n-boot", "100",
                            "--details", "--top", "6"])
    assert code == 0
    table = printed.split("Most unstable examples")[1]
    ids = [int(line.split("│")[1]) for line in table.splitlines() if line.startswith("│")]
    assert ids == sorted(ids) and len(ids) == 6  # the six tie: 1, 11, 12, 14 … not 1, 11, 111, 116
