"""Stores of many small finished runs, built fast, for ``bench_many_runs.py``.

A run recorded through :meth:`ExperimentStore.record_success` costs two fsyncs of its Parquet
file and folder plus a SQLite transaction of its own (``synchronous = FULL``): 10 to 50 ms on a
shared disk, so 10,000 runs would take minutes. :func:`build_store` writes the same layout — the
store's own catalog (``ExperimentStore.create``), each run's Parquet file from the same
DataFrame through the same ``pa.Table.from_pandas`` and ``pq.write_table``, the same catalog
cells — but without the fsyncs and with one transaction for all runs. :func:`check_layout`
proves the files equal the API's: a run recorded through ``record_success`` and the same run
written here hold the same bytes.

Run ``python benchmarks/many_runs_stores.py DIR RUNS`` to build one store (50 predictions a run).
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import ExperimentStore
from seedscope.store.catalog import as_json, now
from seedscope.store.files import sha256, with_label_names
from seedscope.predictions import validate_table

TASK, NAMES = "rte", np.array(["entailment", "not_entailment"])


def run_tables(n_runs: int, n_predictions: int, seed: int):
    """(run index, prediction DataFrame) of each run: every run is right on an example with its own skill, harder
    examples less often, so runs differ in accuracy and in which examples they get wrong."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n_predictions)
    difficulty = rng.uniform(-1, 1, n_predictions)
    skill = rng.uniform(0.5, 2.0, n_runs)
    ids = [str(i) for i in range(n_predictions)]
    for s in range(n_runs):
        right = rng.random(n_predictions) < 1 / (1 + np.exp(difficulty - skill[s]))
        predictions = np.where(right, labels, 1 - labels)
        yield s, pd.DataFrame({"run": str(s), "example_id": ids, "prediction": NAMES[predictions],
                               "label": NAMES[labels]})


def _arrow(store: ExperimentStore, run_id: str, frame: pd.DataFrame) -> pa.Table:
    """The Arrow table ``record_success`` writes for ``frame`` (checked, run id set, label names)."""
    table = validate_table(frame, f"predictions of run {run_id}").assign(run=run_id)
    return pa.Table.from_pandas(with_label_names(table, TASK), preserve_index=False)


def build_store(path: Path, n_runs: int, n_predictions: int = 50, seed: int = 0, model: str = "org/model",
                plan: dict | None = None) -> float:
    """A store of ``n_runs`` done runs of ``n_predictions`` each at ``path`` (a seed sweep, or the first ``n_runs``
    of ``plan``); the seconds it took."""
    start = time.perf_counter()
    plan = plan or plan_to_dict(seed_sweep([TASK], [model], range(n_runs)))
    store = ExperimentStore.create(path, plan)
    ids = [run["run_id"] for run in plan["runs"]][:n_runs]
    rows, stamp = [], now()
    for s, frame in run_tables(n_runs, n_predictions, seed):
        arrow = _arrow(store, ids[s], frame)
        target = store.prediction_path(ids[s])
        pq.write_table(arrow, target)
        accuracy = float((frame["prediction"] == frame["label"]).mean())
        rows.append((stamp, stamp, 1.0, as_json({"total_seconds": 1.0}), as_json({"accuracy": accuracy}),
                     as_json({"torch": "x"}), len(frame), sha256(target.read_bytes()), ids[s]))
    with store.catalog.transaction() as db:
        db.executemany("UPDATE runs SET status = 'done', attempts = 1, started_at = ?, finished_at = ?, duration_s = ?,"
                       " timings_json = ?, metrics_json = ?, environment_json = ?, n_predictions = ?, error = NULL,"
                       " sha256 = ? WHERE run_id = ?", rows)
    return time.perf_counter() - start


def with_runs_to_do(source: Path, target: Path, share: float = 0.05) -> None:
    """A copy of a built store whose last ``share`` of runs are not done yet (pending, one in ten of them
    running), as a store looks while its sweep runs: what ``status`` shows with a time left."""
    shutil.copytree(source, target)
    store = ExperimentStore.open(target)
    ids = [run["run_id"] for run in store.plan()["runs"]]
    to_do = ids[len(ids) - max(1, int(len(ids) * share)):]
    for run_id in to_do:
        store.prediction_path(run_id).unlink()
    with store.catalog.transaction() as db:
        db.executemany("UPDATE runs SET status = 'pending', started_at = NULL, finished_at = NULL, duration_s = NULL,"
                       " timings_json = NULL, metrics_json = NULL, environment_json = NULL, n_predictions = NULL,"
                       " sha256 = NULL WHERE run_id = ?", [(run_id,) for run_id in to_do])
        db.executemany("UPDATE runs SET status = 'running', started_at = ? WHERE run_id = ?",
                       [(now(), run_id) for run_id in to_do[::10]])


def api_seconds_per_run(path: Path, n_runs: int = 100, n_predictions: int = 50) -> float:
    """Seconds a run costs through ``mark_running`` + ``record_success`` (the sweep's path), over ``n_runs``."""
    plan = plan_to_dict(seed_sweep([TASK], ["org/model"], range(n_runs)))
    store = ExperimentStore.create(path, plan)
    ids = [run["run_id"] for run in plan["runs"]]
    start = time.perf_counter()
    for s, frame in run_tables(n_runs, n_predictions, 0):
        store.mark_running(ids[s])
        store.record_success(ids[s], frame, {"accuracy": 0.5}, {"torch": "x"}, {"total_seconds": 1.0})
    return (time.perf_counter() - start) / n_runs


def check_layout(folder: Path) -> None:
    """The fast build writes the bytes ``record_success`` writes, and the store it builds verifies clean."""
    built, recorded = folder / "built", folder / "recorded"
    build_store(built, 3)
    api_seconds_per_run(recorded, 3)
    for run_id in ExperimentStore.open(built).runs()["run_id"]:
        a, b = (ExperimentStore.open(p).prediction_path(run_id).read_bytes() for p in (built, recorded))
        assert a == b, f"{run_id}: the fast build's file differs from record_success's"
    assert ExperimentStore.open(built).check() == []


if __name__ == "__main__":
    seconds = build_store(Path(sys.argv[1]), int(sys.argv[2]))
    print(json.dumps({"runs": int(sys.argv[2]), "build_s": round(seconds, 2)}))
