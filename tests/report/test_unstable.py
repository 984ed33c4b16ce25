"""Unstable examples: the analysis's ranking joined with text, gold label and every seed's answer."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest

from seedscope import analyze
from seedscope.analysis.summary import summarize_tasks
from seedscope.io.results.texts import task_texts
from seedscope.tasks import load_examples
from seedscope.report.unstable import (
    PRED_PREFIX,
    stability_counts,
    unstable_csv,
    unstable_examples,
)


@pytest.fixture
def rte(synthetic_predictions):
    table = synthetic_predictions(("rte",), n_seeds=6, n_examples=277, seed=3)
    return table, summarize_tasks(table, n_boot=50).analyses["rte"]


def test_ranking_and_predictions_come_from_the_inputs(rte):
    table, analysis = rte
    top = unstable_examples(analysis, k=15)
    assert list(top.index) == list(analysis.most_unstable(15).index)
    wide = table.pivot(index="example_id", columns="run", values="prediction")
    for run in wide.columns:
        assert top[f"{PRED_PREFIX}{run}"].astype(int).tolist() == wide.loc[top.index, run].tolist()
    gold = table.drop_duplicates("example_id").set_index("example_id")["label"]
    assert top["label"].astype(int).tolist() == gold.loc[top.index].tolist()
    # the least stable examples really are contested: some seed right, some wrong
    right = wide.loc[top.index].eq(gold.loc[top.index], axis=0).sum(axis=1)
    assert ((right > 0) & (right < wide.shape[1])).all()


def test_counts_of_robust_and_consistently_wrong_by_hand(rte):
    table, analysis = rte
    wide = table.pivot(index="example_id", columns="run", values="prediction")
    gold = table.drop_duplicates("example_id").set_index("example_id")["label"].loc[wide.index]
    n_right = wide.eq(gold, axis=0).sum(axis=1)
    same = wide.nunique(axis=1) == 1
    counts = stability_counts({"rte": analysis}).loc["rte"]
    assert counts["robust"] == int((n_right == wide.shape[1]).sum())
    assert counts["consistently_wrong"] == int((same & (n_right == 0)).sum())
    assert counts["total"] == len(wide)


def test_text_is_joined_from_the_real_task_data(rte, data_dir):
    _, analysis = rte
    top = unstable_examples(analysis, k=5, texts=task_texts("rte", data_dir))
    dev = load_examples("rte", "validation", data_dir).set_index("example_id")
    assert top["text"].tolist() == dev.loc[top.index, "text"].tolist()
    assert top["text_pair"].tolist() == dev.loc[top.index, "text_pair"].tolist()


def test_text_column_of_the_predictions_wins(synthetic_predictions):
    table = synthetic_predictions(("rte",), n_seeds=3, n_examples=40).drop(columns="task")
    table["text"] = "sentence " + table["example_id"]
    analysis = analyze(table, n_boot=20)
    top = unstable_examples(analysis, k=4, texts=pd.DataFrame({"text": ["other"]}, index=["0"]))
    assert top["text"].tolist() == ["sentence " + i for i in top.index]
    assert "text_pair" not in top.columns


def test_regression_lists_the_widest_spread():
    rng = np.random.default_rng(0)
    gold = rng.random(30)
    rows = [pd.DataFrame({"run": str(s), "example_id": [str(i) for i in range(30)],
                          "prediction": gold + rng.normal(0, 0.05 * (1 + np.arange(30) / 10)), "label": gold})
            for s in range(4)]
    analysis = analyze(pd.concat(rows), task_type="regression", n_boot=20)
    top = unstable_examples(analysis, k=3)
    assert top["prediction_std"].is_monotonic_decreasing
    assert top[[f"{PRED_PREFIX}{s}" for s in range(4)]].to_numpy().dtype.kind == "f"


def test_csv_export_round_trips(rte):
    _, analysis = rte
    frames = {"rte": unstable_examples(analysis, k=7), "again": unstable_examples(analysis, k=2)}
    back = pd.read_csv(io.StringIO(unstable_csv(frames)), dtype={"example_id": str})
    assert back.columns[0] == "task" and back.columns[1] == "example_id"
    assert back["task"].tolist() == ["rte"] * 7 + ["again"] * 2
    assert back["example_id"].tolist()[:7] == list(frames["rte"].index)
    np.testing.assert_allclose(back["agreement"][:7], frames["rte"]["agreement"])
    assert unstable_csv({}) == ""
