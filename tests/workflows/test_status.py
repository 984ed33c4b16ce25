"""Where a store's runs stand: counts by state, the runs that need attention, the time left, read at a glance."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta, timezone

import pandas as pd
import pytest

from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import CATALOG, ExperimentStore
from seedscope.workflows import status as run_status
from seedscope.workflows.costing import remaining_seconds


@pytest.fixture
def store(tmp_path):
    """Six runs: three done (60, 70, 80 s), one failed, one running for an hour, one pending."""
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["rte"], ["org/m"], range(6))))
    ids = [run["run_id"] for run in store.pending_runs()]
    for run_id, seconds in zip(ids[:3], (60.0, 70.0, 80.0)):
        store.mark_running(run_id)
        store.record_success(run_id, pd.DataFrame({"run": 0, "example_id": ["0", "1"], "prediction": [1, 0]}),
                             {"accuracy": 0.5}, {}, {"total_seconds": seconds})
    store.mark_running(ids[3])
    store.record_failure(ids[3], "Traceback (most recent call last):\nRuntimeError: CUDA out of memory")
    store.mark_running(ids[4])
    an_hour_ago = (datetime.now(timezone.utc) - timedelta(hours=1)).isoformat(timespec="milliseconds")
    with sqlite3.connect(store.path / CATALOG) as db:
        db.execute("UPDATE runs SET started_at = ? WHERE run_id = ?", (an_hour_ago, ids[4]))
    return store


@pytest.mark.parametrize("full", [True, False])
def test_counts_attention_and_time_left_read_in_full_or_at_a_glance(store, full):
    status = run_status.store_status(store, full=full)
    ids = store.runs()["run_id"].tolist()
    assert status.counts == {"done": 3, "failed": 1, "running": 1, "pending": 1} and status.to_do == 3
    assert status.attention["run_id"].tolist() == [ids[3], ids[4]]
    failed, running = status.attention["reason"]
    assert failed == "RuntimeError: CUDA out of memory"
    assert running.startswith("running for 1 h 00 min") and "51× the median 1 min 10 s of the finished runs: lost?" in running
    assert status.attention["seed"].tolist() == [3, 4]
    assert status.remaining == remaining_seconds(store) and status.full == full
    assert status.problems == []


def test_the_glance_reads_no_file_and_no_result_cell(store, monkeypatch):
    first = store.runs()["run_id"].iloc[0]
    pd.read_parquet(store.prediction_path(first)).head(1).to_parquet(store.prediction_path(first))
    with sqlite3.connect(store.path / CATALOG) as db:  # a result cell the glance does not parse
        db.execute("UPDATE runs SET metrics_json = '{' WHERE run_id = ?", (first,))
    monkeypatch.setattr(run_status, "FULL_RUNS", 5)
    glance = run_status.store_status(store)
    assert not glance.full and glance.problems == [] and "metrics" not in glance.runs.columns
    store.prediction_path(first).unlink()
    assert [p.kind for p in run_status.store_status(store).problems] == ["missing"]
    monkeypatch.setattr(run_status, "FULL_RUNS", 6)  # up to FULL_RUNS runs: everything is read
    with pytest.raises(Exception, match=f"run {first} is damaged in the catalog"):
        run_status.store_status(store)


def test_a_run_is_not_running_too_long_before_any_has_finished(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["rte"], ["org/m"], [1, 2])))
    store.mark_running(store.pending_runs()[0]["run_id"])
    status = run_status.store_status(store)
    assert status.attention.empty and status.remaining is None and status.counts == {"running": 1, "pending": 1}


def test_state_counts_is_the_one_place_states_are_counted():
    runs = pd.DataFrame({"status": ["done", "failed", "done", "pending"]})
    assert run_status.state_counts(runs) == {"done": 2, "failed": 1, "pending": 1}
