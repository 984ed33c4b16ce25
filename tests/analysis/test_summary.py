"""Multi-task summary: paper Table 1 / Table 7 layouts and the training-size correlation."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import seedscope


def task_table(task: str, accuracy: float, n_runs: int = 4, n_examples: int = 80, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, 2, n_examples)
    rows = []
    for run in range(n_runs):
        pred = np.where(rng.random(n_examples) < accuracy, gold, 1 - gold)
        rows.append(pd.DataFrame({"task": task, "run": run, "example_id": np.arange(n_examples), "prediction": pred, "label": gold}))
    return pd.concat(rows, ignore_index=True)


TABLE = pd.concat(
    [task_table("cb", 0.6, seed=1), task_table("cola", 0.7, seed=2), task_table("sst2", 0.9, seed=3), task_table("qnli", 0.85, seed=4)]
)


def test_table1_and_table7_layouts_hold_the_analysis_numbers():
    summary = seedscope.summarize_tasks(TABLE, n_boot=100)
    assert list(summary.table1.index) == ["zeta", "VAR", "CON", "CCON"]
    assert list(summary.table1.columns) == ["cb", "cola", "sst2", "qnli"]
    cb, cola = summary.analyses["cb"], summary.analyses["cola"]
    # ζ is the registry's primary metric: MCC for CoLA, accuracy otherwise
    assert cola.primary_metric == "mcc" and cb.primary_metric == "accuracy"
    assert summary.table1.loc["zeta", "cola"] == pytest.approx(cola.macro.loc["mcc", "mean"])
    assert summary.table1.loc["VAR", "cb"] == pytest.approx(cb.macro.loc["accuracy", "var_published"])
    assert summary.table1.loc["CCON", "cb"] == pytest.approx(cb.micro.iloc[0]["ccon"])
    assert summary.table7.loc["cb", ("F1", "mean")] == pytest.approx(cb.macro.loc["f1_macro", "mean"])
    assert summary.table7.loc["cb", ("P", "pm")] == pytest.approx(cb.macro.loc["precision_macro", "var_published"])
    assert summary.table7.loc["cb", ("CON", "pm")] == pytest.approx(cb.micro.iloc[0]["con_pair_std"])


def test_table7_shows_mcc_as_the_accuracy_of_cola_as_the_paper_does():
    summary = seedscope.summarize_tasks(TABLE, n_boot=100)
    cola = summary.analyses["cola"]
    assert summary.table7.loc["cola", ("Accuracy", "mean")] == pytest.approx(cola.macro.loc["mcc", "mean"])
    assert summary.table7.loc["cola", ("Accuracy", "pm")] == pytest.approx(cola.macro.loc["mcc", "var_published"])
    assert summary.table7.loc["cola", ("Accuracy", "mean")] != pytest.approx(cola.macro.loc["accuracy", "mean"])
    assert summary.table7.loc["cola", [("P", "mean"), ("R", "mean"), ("F1", "mean")]].isna().all()


def test_size_correlation_matches_scipy_with_registry_and_given_sizes():
    summary = seedscope.summarize_tasks(TABLE, n_boot=100)
    sizes = np.array([250, 8551, 67349, 104743], dtype=float)  # registry train sizes
    for quantity in ("VAR", "CON", "CCON"):
        expected = stats.pearsonr(sizes, summary.table1.loc[quantity].to_numpy())
        assert summary.correlation.loc[quantity, "r"] == pytest.approx(expected.statistic)
        assert summary.correlation.loc[quantity, "p_value"] == pytest.approx(expected.pvalue)
        assert summary.correlation.loc[quantity, "n_tasks"] == 4
    given = {"cb": 10, "cola": 100, "sst2": 1000, "qnli": 10000}
    logged = seedscope.summarize_tasks(summary.analyses, train_sizes=given, log_size=True)
    expected = stats.pearsonr([1, 2, 3, 4], summary.table1.loc["CON"].to_numpy()).statistic
    assert logged.correlation.loc["CON", "r"] == pytest.approx(expected)


def test_too_few_tasks_or_unknown_sizes_give_no_correlation():
    summary = seedscope.summarize_tasks(pd.concat([task_table("mine", 0.7), task_table("cb", 0.6)]), n_boot=50)
    assert summary.correlation["r"].isna().all()
    assert summary.correlation.loc["CON", "n_tasks"] == 1  # "mine" has no known size
    assert math.isnan(summary.correlation.loc["VAR", "p_value"])


def test_several_models_are_labelled():
    table = pd.concat([TABLE.assign(model="roberta"), TABLE.assign(model="llama")])
    summary = seedscope.summarize_tasks(table, n_boot=50)
    assert "cb (llama)" in summary.table1.columns and "cb (roberta)" in summary.table1.columns
    assert summary.correlation.loc["VAR", "n_tasks"] == 8


def test_needs_a_task_column():
    with pytest.raises(seedscope.SeedscopeError, match="task"):
        seedscope.summarize_tasks(TABLE.drop(columns="task"))


def test_groups_of_two_tasks_under_many_implementations_give_no_size_correlation():
    """32 groups of SST-2 and RTE (16 implementations each) are two training-set sizes, not 32 tasks: no r."""
    import pandas as pd

    from seedscope.analysis.summary import _size_correlation

    groups = [f"{task} (impl-{i})" for task in ("sst2", "rte") for i in range(16)]
    table1 = pd.DataFrame({g: {"VAR": 0.01 * (k % 5 + 1), "CON": 0.9 - 0.01 * (k % 3), "CCON": 0.5 + 0.01 * (k % 4)}
                           for k, g in enumerate(groups)})
    sizes = {g: 67349.0 if g.startswith("sst2") else 2490.0 for g in groups}
    correlation = _size_correlation(table1, sizes, log_size=False)
    assert correlation["r"].isna().all() and (correlation["n_tasks"] == 32).all()
