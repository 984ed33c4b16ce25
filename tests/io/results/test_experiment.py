"""An experiment directory given to read_predictions is read through ExperimentStore."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import read_predictions
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import ExperimentStore


def _store(path, tasks=("rte",), seeds=(42, 52)):
    store = ExperimentStore.create(path, plan_to_dict(seed_sweep(list(tasks), ["models/minilm"], list(seeds))))
    for i, run in enumerate(store.pending_runs()):
        probs = np.random.default_rng(i).dirichlet(np.ones(2), size=3)
        table = pd.DataFrame({"run": "x", "example_id": ["0", "1", "2"], "prediction": probs.argmax(axis=1),
                              "label": [0, 1, 1], "prob_0": probs[:, 0], "prob_1": probs[:, 1]})
        store.mark_running(run["run_id"])
        store.record_success(run["run_id"], table, {"accuracy": 0.5})
    return store


def test_store_folder_is_read_with_task_and_model(tmp_path):
    _store(tmp_path / "exp", tasks=("rte", "sst2"))
    table = read_predictions([tmp_path / "exp"])
    assert {"run", "example_id", "prediction", "label", "task", "model"} <= set(table.columns)
    assert sorted(table.groupby(["task", "run"]).size().to_dict()) == [
        ("rte", "42"), ("rte", "52"), ("sst2", "42"), ("sst2", "52")]
    assert set(read_predictions([tmp_path / "exp"], task="sst2")["task"]) == {"sst2"}


def test_two_stores_with_the_same_runs_are_refused(tmp_path):
    _store(tmp_path / "a")
    _store(tmp_path / "b")
    with pytest.raises(SeedscopeError, match=r"run 42, task rte, model .* comes from both .*a and .*b"):
        read_predictions([tmp_path / "a", tmp_path / "b"])
    with pytest.raises(SeedscopeError, match=r"run names cannot be given for an experiment store"):
        read_predictions([tmp_path / "a"], run_names=["x"])


def test_a_store_with_a_classification_and_a_regression_task(tmp_path):
    """SST-2 labels and STS-B scores in one store: each task keeps its own type (the demo's store)."""
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["sst2", "stsb"], ["models/minilm"], [1, 2])))
    rng = np.random.default_rng(0)
    for run in store.pending_runs():
        if run["task"] == "sst2":
            table = pd.DataFrame({"run": "x", "example_id": ["0", "1", "2"], "prediction": [0, 1, 1], "label": [0, 1, 0]})
        else:
            table = pd.DataFrame({"run": "x", "example_id": ["0", "1", "2"], "prediction": rng.uniform(0, 5, 3),
                                  "label": [1.0, 2.5, 4.0]})
        store.mark_running(run["run_id"])
        store.record_success(run["run_id"], table, {}, timings={"train_examples": 320})
    table = read_predictions([store.path])
    assert set(table.loc[table["task"] == "sst2", "prediction"]) == {"negative", "positive"}
    from seedscope.analysis.summary import summarize_tasks
    from seedscope.store.views import train_sizes

    summary = summarize_tasks(table, train_sizes=train_sizes(store))
    assert summary.analyses["stsb"].task_type == "regression" and summary.analyses["sst2"].primary_metric == "accuracy"
    assert summary.train_sizes.to_dict() == {"sst2": 320.0, "stsb": 320.0}  # what the runs used, not 67,349
