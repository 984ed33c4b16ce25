"""``analyze`` and ``report`` of more runs than the S × S matrices are made for (300): summaries, not 10⁸ cells."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from seedscope.metrics.pairs import EXACT_PAIR_RUNS, PAIR_SAMPLE

RUNS = EXACT_PAIR_RUNS + 10


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """310 runs of 20 examples each, as one long table."""
    rng = np.random.default_rng(52)
    gold = rng.integers(0, 2, 20)
    skill = rng.uniform(0.5, 0.95, RUNS)[:, None]
    predictions = np.where(rng.random((RUNS, 20)) < skill, gold, 1 - gold)
    frame = pd.DataFrame({"run": np.repeat([f"seed_{s}" for s in range(RUNS)], 20),
                          "example_id": np.tile(np.arange(20), RUNS), "prediction": predictions.ravel(),
                          "label": np.tile(gold, RUNS)})
    path = tmp_path_factory.mktemp("many") / "runs.csv"
    frame.to_csv(path, index=False)
    return path


def test_analyze_says_the_spread_is_sampled_and_lists_the_least_agreeing_runs(table, tmp_path, cli, monkeypatch):
    import seedscope.cli.analyze as analyze_cli

    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setattr(analyze_cli, "TERMINAL_ROWS", 100)  # thousands of runs: a table per run is one line
    code, out, err = cli(["analyze", str(table), "--details", "--n-boot", "200", "--json", str(tmp_path / "a.json")])
    assert code == 0, err
    text = " ".join(out.split())
    assert f"pair std from {PAIR_SAMPLE:,} pairs sampled with the seed, ± its standard error" in text
    assert "pair std SE" in text and f"Pairwise values: distribution over {PAIR_SAMPLE:,} sampled pairs" in text
    assert f"Least-agreeing runs (top 10): mean CON / CCON with the other {RUNS - 1} runs, exact" in text
    assert f"Per run: {RUNS} rows (in the JSON / CSV / Markdown outputs)" in text
    document = json.loads((tmp_path / "a.json").read_text())
    assert document["con_matrix"] is None and document["con_matrix_sampled"] is True
    assert document["micro"]["n_pairs_sampled"] == PAIR_SAMPLE and len(document["per_run"]) == RUNS
    assert len(document["least_agreeing_runs"]) == 10


def test_report_shows_the_distribution_of_sampled_pairs_and_counts_each_answer(table, tmp_path, cli):
    code, out, err = cli(["report", str(table), "--html", str(tmp_path / "r.html")])
    assert code == 0, err
    html = (tmp_path / "r.html").read_text()
    assert "run pairs drawn at random" in html and "con-matrix" not in html
    assert "Least-agreeing runs" in html and "answers (runs)" in html and "pred_seed_" not in html
    assert f"… ({RUNS:,} runs)" in html
