"""A sampled run's sample file: written beside its predictions, vouched for by them, checked by verify, redone by --resume."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.samples import check_sample_table
from seedscope.store import ExperimentStore
from seedscope.store.files import SAMPLES_SHA256_KEY, sha256


def _store(tmp_path, done=2) -> ExperimentStore:
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["sst2"], ["m"], [1, 2, 3], method="icl")))
    rng = np.random.default_rng(0)
    for run_id in [r["run_id"] for r in store.pending_runs()][:done]:
        labels = rng.choice(["negative", "positive"], 10)
        samples = pd.DataFrame({"run": run_id, "example_id": np.repeat([str(i) for i in range(10)], 4),
                                "sample": np.tile(range(4), 10), "prediction": rng.choice(["negative", "positive"], 40),
                                "label": np.repeat(labels, 4)})
        samples["correct"] = (samples["prediction"] == samples["label"]).astype(float)
        first = samples[samples["sample"] == 0]
        store.mark_running(run_id)
        store.record_success(run_id, first.drop(columns=["sample", "correct"]), {"accuracy": 0.5}, samples=samples)
    return store


def test_every_sample_is_kept_and_its_checksum_is_in_the_prediction_file(tmp_path, cli):
    store = _store(tmp_path)
    run_id = store.pending_runs()[0]["run_id"]
    done = [r for r in store.runs()["run_id"] if r != run_id]
    for run in done:
        samples = check_sample_table(pd.read_parquet(store.samples_path(run)))
        assert len(samples) == 40 and set(samples["run"]) == {run}
        metadata = pq.read_schema(store.prediction_path(run)).metadata
        assert metadata[SAMPLES_SHA256_KEY].decode() == sha256(store.samples_path(run).read_bytes())
    assert store.verify() == []
    assert cli(["verify", str(store.path)])[0] == 0


def test_a_changed_missing_or_unfinished_sample_file_is_found_and_redone(tmp_path):
    store = _store(tmp_path)
    first, second, third = store.runs()["run_id"]
    changed = pd.read_parquet(store.samples_path(first)).assign(correct=1.0)
    changed.to_parquet(store.samples_path(first))
    store.samples_path(second).unlink()
    store.samples_path(first).replace(store.samples_path(third))  # a file of a run that is not done
    pd.read_parquet(store.samples_path(third)).to_parquet(store.samples_path(first))
    kinds = {(p.kind, p.run_id) for p in store.verify()}
    assert kinds == {("altered", first), ("missing", second), ("unfinished", third)}
    ExperimentStore.create(store.path, store.plan(), resume=True)
    assert store.verify() == []
    assert sorted(r["run_id"] for r in store.pending_runs()) == sorted([first, second, third])


def test_the_samples_view_reads_every_sampled_run_against_its_checksum(tmp_path):
    store = _store(tmp_path)
    table = store.samples()
    assert len(table) == 2 * 40 and set(table["run"]) == {"1", "2"} and set(table["task"]) == {"sst2"}
    check_sample_table(table)
    run = store.runs()["run_id"].iloc[0]
    pd.read_parquet(store.samples_path(run)).assign(correct=0.0).to_parquet(store.samples_path(run))
    with pytest.raises(SeedscopeError, match="SHA-256 differs"):
        store.samples()
