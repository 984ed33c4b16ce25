"""Stores read for a seed-effect analysis: groups of two runs or more analysed, single runs named, factor studies pointed
to ``factors analyze`` — on stores written as sweeps and factor studies write them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import DegenerateRunWarning, SeedscopeError
from seedscope.factor_study.plan import factor_study_plan
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.runners.result import RunResult
from seedscope.store import ExperimentStore
from seedscope.workflows.stores import analysable_groups
from seedscope.workflows.sweeping import execute

LABELS = [i % 2 for i in range(20)]


def predicting(spec, data_dir=None, on_step=None) -> RunResult:
    """Predictions decided by the run's model_init seed: each run differs, no training."""
    prediction = np.random.default_rng(spec.seeds.model_init).integers(0, 2, len(LABELS))
    table = pd.DataFrame({"run": spec.run_id, "example_id": [str(i) for i in range(len(LABELS))],
                          "prediction": prediction, "label": LABELS})
    return RunResult(spec.run_id, table, {"accuracy": float((prediction == LABELS).mean())})


def factor_study_store(path) -> ExperimentStore:
    plan = factor_study_plan("sst2", "org/tiny", ["data_order", "model_init"], 2, 2, 2)
    store = ExperimentStore.create(path, plan.to_dict())
    execute(list(plan.specs), store, runner=predicting)
    return store


def sweep_store(path, done: dict[str, int]) -> ExperimentStore:
    """Two models, three seeds each; ``done``: model → how many of its runs finished (the rest stay pending)."""
    specs = seed_sweep(["sst2"], list(done), [1, 2, 3])
    store = ExperimentStore.create(path, plan_to_dict(specs))
    chosen = [spec for model, n in done.items() for spec in [s for s in specs if s.model == model][:n]]
    execute(chosen, store, runner=predicting)
    return store


def test_a_factor_study_store_is_pointed_to_factors_analyze(tmp_path):
    store = factor_study_store(tmp_path / "study")
    with pytest.raises(SeedscopeError, match=r"holds a factor study: each of its configurations is one run.*"
                                             r"seedscope factors analyze .*study"):
        analysable_groups(store.predictions(), [store.path])


def test_single_run_groups_are_left_out_and_named(tmp_path):
    store = sweep_store(tmp_path / "exp", {"org/a": 3, "org/b": 1})
    with pytest.warns(DegenerateRunWarning, match="single finished run left out"):  # filterable in Python
        kept, notes = analysable_groups(store.predictions(), [store.path])
    assert set(kept["model"]) == {"a"} and kept["run"].nunique() == 3
    assert notes == ["1 group(s) with a single finished run left out (a seed effect compares two runs or more): sst2 / b"]


def test_a_sweep_store_of_single_runs_only_says_so(tmp_path):
    store = sweep_store(tmp_path / "exp", {"org/a": 1, "org/b": 1})
    with pytest.raises(SeedscopeError, match=r"every group of .*exp holds a single finished run \(task sst2, model a"):
        analysable_groups(store.predictions(), [store.path])


def test_single_runs_only_are_a_note_where_something_else_is_shown(tmp_path):
    """An implementation study compares one seed's runs: without ``required`` no group left is a note, for any
    table of task and model groups."""
    store = sweep_store(tmp_path / "exp", {"org/a": 1, "org/b": 1})
    for paths in ([store.path], [tmp_path / "predictions.csv"]):
        with pytest.warns(DegenerateRunWarning):
            kept, notes = analysable_groups(store.predictions(), paths, required=False)
        assert kept.empty and notes == ["every group (2) holds a single finished run, so there are no seed effects "
                                        "to show (a seed effect compares two runs or more)"]


def test_other_inputs_are_left_as_they_are(tmp_path):
    store = sweep_store(tmp_path / "exp", {"org/a": 3, "org/b": 1})
    table = store.predictions()
    kept, notes = analysable_groups(table, [tmp_path / "predictions.csv"])  # not a store: the analysis decides
    assert kept is table and notes == []
