"""The store's read-only views: the long prediction table read in one go, and the state of each run at a glance."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.predictions import RUN, UNCALIBRATED, prob_columns
from seedscope.store import ExperimentStore, views


def _store(tmp_path):
    """Two tasks (with and without probabilities), a calibrated run beside plain ones, a failed and a pending run."""
    plan = plan_to_dict(seed_sweep(["rte"], ["org/a"], [1, 2, 3]) + seed_sweep(["stsb"], ["org/a"], [1, 2])
                        + seed_sweep(["rte"], ["org/b"], [1], method="lora"))
    store = ExperimentStore.create(tmp_path / "exp", plan)
    ids = [run["run_id"] for run in plan["runs"]]
    rng = np.random.default_rng(0)
    for number, run_id in enumerate(ids[:5]):
        store.mark_running(run_id)
        if run_id.startswith("stsb"):
            table = pd.DataFrame({"run": 0, "example_id": ["a", "b", "c"], "prediction": rng.random(3) * 5,
                                  "label": [1.0, 2.5, 4.0]})
        else:
            p = rng.dirichlet([1, 1], 4)
            names = np.array(["entailment", "not_entailment"])
            table = pd.DataFrame({"run": 0, "example_id": list("wxyz"), "prediction": names[p.argmax(axis=1)],
                                  "label": names[[0, 1, 1, 0]], "prob_entailment": p[:, 0],
                                  "prob_not_entailment": p[:, 1]})
            if number == 1:  # a calibrated prompted run keeps what it predicted before calibration
                table[f"{UNCALIBRATED}prediction"] = names[1 - p.argmax(axis=1)]
                table[f"{UNCALIBRATED}prob_entailment"] = p[:, 1]
                table[f"{UNCALIBRATED}prob_not_entailment"] = p[:, 0]
        store.record_success(run_id, table, {"accuracy": 0.5}, {}, {"total_seconds": 2.0 + number})
    store.mark_running(ids[5])
    store.record_failure(ids[5], "ValueError: no head")
    return store


def _file_by_file(store: ExperimentStore, uncalibrated: bool) -> pd.DataFrame:
    """The long table as it was read before: each file through pandas, its columns fixed, then one concat."""
    runs = views.run_index(store)
    frames = []
    for run in runs[runs["status"] == "done"].itertuples():
        frame = pq.read_table(io.BytesIO(store.prediction_path(run.run_id).read_bytes())).to_pandas()
        kept = [c for c in frame.columns if c.startswith(UNCALIBRATED)]
        if uncalibrated and kept:
            frame = frame.drop(columns=["prediction", *prob_columns(frame)]).rename(
                columns={c: c[len(UNCALIBRATED):] for c in kept})[frame.columns.drop(kept)]
        else:
            frame = frame.drop(columns=kept)
        frame[RUN] = run.run_id if pd.isna(run.seed) else str(run.seed)
        frame.insert(0, "model", run.model_name + ("" if run.method == "full" else f"-{run.method}"))
        frame.insert(0, "task", run.task)
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("uncalibrated", [False, True])
def test_the_long_table_is_the_one_read_file_by_file(tmp_path, uncalibrated):
    store = _store(tmp_path)
    table = store.predictions(uncalibrated=uncalibrated)
    pd.testing.assert_frame_equal(table, _file_by_file(store, uncalibrated), check_exact=True)
    calibrated = table[(table["task"] == "rte") & (table["run"] == "2") & (table["model"] == "a")]
    before = store.predictions()
    flipped = before[(before["task"] == "rte") & (before["run"] == "2") & (before["model"] == "a")]
    assert (calibrated["prediction"].to_numpy() != flipped["prediction"].to_numpy()).all() == uncalibrated
    assert store.predictions(task="stsb")["prediction"].dtype == float


def test_a_changed_file_is_refused_when_read_in_one_go(tmp_path):
    store = _store(tmp_path)
    first = views.run_index(store)["run_id"].iloc[0]
    pd.read_parquet(store.prediction_path(first)).to_parquet(store.prediction_path(first))
    with pytest.raises(SeedscopeError, match=f"is not the file run {first} wrote"):
        store.predictions()


def test_the_state_of_each_run_at_a_glance(tmp_path):
    store = _store(tmp_path)
    states = views.run_states_frame(store)
    full = store.runs()
    assert states.columns.tolist() == ["run_id", "status", "started_at", "finished_at", "duration_s", "error",
                                       "seeds_json"]
    for column in ("run_id", "status", "started_at", "finished_at", "error"):
        assert states[column].tolist() == full[column].tolist(), column
    assert states["duration_s"].tolist() == pytest.approx(full["duration_s"].tolist(), nan_ok=True)
    seeded = views.with_seeds(store, states.iloc[[0, 5]])
    assert seeded["seed"].tolist() == full["seed"].iloc[[0, 5]].tolist()
    assert seeded["data_order"].tolist() == full["data_order"].iloc[[0, 5]].tolist()
