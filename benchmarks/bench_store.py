"""Benchmark: what the experiment store's safety costs, and how fast tasks load.

1. Recording runs: 50 runs × 4,848 predictions (MultiRC dev size, two probability columns)
   through ``ExperimentStore.record_success`` (label codes → names, Parquet via temp file +
   fsync + rename, then a catalog transaction) against the obvious alternative, a plain
   ``DataFrame.to_csv`` per run with no catalog, no fsync and no atomicity.
2. Reading them back: ``store.predictions()`` (one long table with task/model/run columns)
   against ``pd.read_csv`` of the CSV files + concat.
3. Loading the largest local splits with ``load_examples`` (validation, ids, label coding)
   against a bare ``pd.read_csv(sep="\\t", quoting=QUOTE_NONE)`` / ``pd.read_json(lines=True)``.

Run: .venv/bin/python benchmarks/bench_store.py
"""

from __future__ import annotations

import csv
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import ExperimentStore
from seedscope.tasks import load_examples

RUNS, EXAMPLES = 50, 4848
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def predictions(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    p = rng.uniform(size=EXAMPLES)
    return pd.DataFrame({"run": str(seed), "example_id": [f"{i // 50}-{i // 5}-{i}" for i in range(EXAMPLES)],
                         "prediction": (p > 0.5).astype(int), "label": rng.integers(0, 2, EXAMPLES),
                         "prob_0": 1 - p, "prob_1": p})


def timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def main() -> None:
    tables = [predictions(s) for s in range(RUNS)]
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch)
        plan = plan_to_dict(seed_sweep(["multirc"], ["org/model"], range(RUNS)))
        store = ExperimentStore.create(root / "store", plan)
        ids = [run["run_id"] for run in plan["runs"]]

        def write_store():
            for run_id, table in zip(ids, tables):
                store.mark_running(run_id)
                store.record_success(run_id, table, {"accuracy": 0.5}, {"torch": "x"}, {"total_seconds": 1.0})

        def write_csv():
            (root / "csv").mkdir()
            for run_id, table in zip(ids, tables):
                table.to_csv(root / "csv" / f"{run_id}.csv", index=False)

        rows = [("write 50 runs", timed(write_store), timed(write_csv))]
        read_store = timed(store.predictions)
        read_csv = timed(lambda: pd.concat([pd.read_csv(p) for p in sorted((root / "csv").glob("*.csv"))]))
        rows.append(("read them back", read_store, read_csv))
        assert store.check() == []

    sst2 = DATA / "glue" / "SST-2" / "train.tsv"
    multirc = DATA / "superglue" / "MultiRC" / "train.jsonl"
    rows.append(("load SST-2 train (67,349)", timed(lambda: load_examples("sst2", "train", DATA)),
                 timed(lambda: pd.read_csv(sst2, sep="\t", quoting=csv.QUOTE_NONE))))
    rows.append(("load MultiRC train (27,243)", timed(lambda: load_examples("multirc", "train", DATA)),
                 timed(lambda: pd.read_json(multirc, lines=True))))

    print(f"{'operation':<30} {'seedscope s':>12} {'plain s':>9} {'ratio':>7}")
    for name, ours, plain in rows:
        print(f"{name:<30} {ours:>12.3f} {plain:>9.3f} {ours / plain:>6.2f}x")
    write = rows[0][1]
    print(f"\nstore: {RUNS / write:.0f} runs/s recorded ({RUNS * EXAMPLES / write:,.0f} predictions/s), "
          f"atomic Parquet + fsync + catalog; plain CSV is the unsafe alternative. "
          f"(The MultiRC 'plain' read only parses passages; seedscope also flattens answers.)")


if __name__ == "__main__":
    main()
