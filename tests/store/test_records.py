"""Result records: executions write files, never the catalog; one writer takes them in; the catalog is rebuilt from them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.cli import main
from seedscope.errors import SeedscopeError
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import CATALOG, ExperimentStore
from seedscope.store.commit import commit_failure, commit_success
from seedscope.store.intake import take_in
from seedscope.store.records import listing, read_record, record_path, start_path, write_start


def _plan(seeds=(1, 2, 3)) -> dict:
    return plan_to_dict(seed_sweep(["rte"], ["models/minilm"], list(seeds)))


def _table(seed: int, n: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(2), size=n)
    return pd.DataFrame({"run": 0, "example_id": [str(i) for i in range(n)], "prediction": probs.argmax(axis=1),
                         "label": rng.integers(0, 2, n), "prob_0": probs[:, 0], "prob_1": probs[:, 1]})


def _commit(root: Path, run_id: str, seed: int, attempt: int = 1):
    """What a job does when its run finishes: files and a record, no catalog."""
    return commit_success(root, run_id, "rte", _table(seed), {"accuracy": 0.1 * seed}, environment={"node": "n1"},
                          timings={"total_seconds": 3.0}, attempt=attempt, started_at="2026-12-01T10:00:00.000+00:00")


def test_a_result_committed_without_the_catalog_is_taken_in_by_the_next_command(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    first, second, third = store.runs()["run_id"]
    write_start(store.path, first, 1, "2026-12-01T10:00:00.000+00:00", {"node": "n1"})
    write_start(store.path, second, 1, "2026-12-01T10:00:00.000+00:00", {"node": "n1"})
    assert _commit(store.path, first, 1).claimed
    commit_failure(store.path, third, "ValueError: no head", attempt=1)
    assert store.runs()["status"].tolist() == ["pending"] * 3  # the catalog knows nothing yet

    opened = ExperimentStore.open(store.path)  # any command that opens the store takes the records in
    runs = opened.runs().set_index("run_id")
    assert runs["status"].to_dict() == {first: "done", second: "running", third: "failed"}
    assert runs.loc[first, "duration_s"] == 3.0 and runs.loc[first, "metrics"] == {"accuracy": 0.1}
    assert runs.loc[third, "error"] == "ValueError: no head" and runs.loc[second, "attempts"] == 1
    assert opened.environment().set_index("run_id").loc[first, "node"] == "n1"
    assert opened.predictions()["prediction"].tolist() == np.array(["entailment", "not_entailment"])[
        _table(1)["prediction"]].tolist()
    assert not start_path(store.path, first).exists() and start_path(store.path, second).exists()
    assert opened.check() == [] and take_in(opened).finished == {}  # taken in once: nothing more to do


def test_a_run_executed_twice_has_one_result_and_the_second_is_an_attempt(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    run_id = store.runs()["run_id"][0]
    kept = _commit(store.path, run_id, 1, attempt=1)
    digest = store.prediction_path(run_id).read_bytes()
    again = _commit(store.path, run_id, 2, attempt=2)  # a requeued job that finished after all, other predictions
    assert kept.claimed and not again.claimed
    assert store.prediction_path(run_id).read_bytes() == digest  # never a changed prediction
    found = listing(store.path)
    assert found.results == {run_id} and len(found.attempts) == 1 and found.temporaries == []
    attempt = json.loads(found.attempts[0].read_text())
    assert attempt["attempt"] == 2 and attempt["result_sha256"] == kept.record["sha256"] != attempt["sha256"]
    opened = ExperimentStore.open(store.path)
    run = opened.runs().iloc[0]
    assert run["status"] == "done" and run["attempts"] == 2 and len(opened.predictions()) == 5  # one row per example
    assert opened.check() == []

    opened.mark_running(opened.runs()["run_id"][1])  # in this process too: a second outcome is only an attempt
    second = opened.runs()["run_id"][1]
    opened.record_success(second, _table(3), {"accuracy": 0.3})
    opened.record_failure(second, "it ran again and failed")
    assert opened.runs().set_index("run_id").loc[second, "status"] == "done"


def test_resume_sets_a_failed_result_aside_and_redoes_its_run(tmp_path):
    plan = _plan()
    store = ExperimentStore.create(tmp_path / "exp", plan)
    run_id = store.runs()["run_id"][0]
    store.mark_running(run_id)
    store.record_failure(run_id, "CUDA out of memory")
    resumed = ExperimentStore.create(store.path, plan, resume=True)
    assert resumed.runs()["status"].iloc[0] == "pending" and not record_path(store.path, run_id).exists()
    resumed.mark_running(run_id)
    resumed.record_success(run_id, _table(1), {"accuracy": 0.5})
    run = resumed.runs().iloc[0]
    assert run["status"] == "done" and run["attempts"] == 2 and resumed.check() == []
    attempts = listing(store.path).attempts
    assert [json.loads(path.read_text())["error"] for path in attempts] == ["CUDA out of memory"]


def test_an_unreadable_record_is_a_problem_and_resume_redoes_its_run(tmp_path):
    plan = _plan()
    store = ExperimentStore.create(tmp_path / "exp", plan)
    run_id = store.runs()["run_id"][0]
    _commit(store.path, run_id, 1)
    record_path(store.path, run_id).write_text("{half a rec")
    problems = ExperimentStore.open(store.path).verify()
    assert [(p.kind, p.run_id) for p in problems] == [("record", run_id)] and "is not JSON" in problems[0].message
    resumed = ExperimentStore.create(store.path, plan, resume=True)
    assert resumed.runs()["status"].iloc[0] == "pending" and resumed.check() == []
    assert not store.prediction_path(run_id).exists()


def test_a_deleted_catalog_is_rebuilt_from_the_files_with_the_same_runs(tmp_path, capsys):
    store = ExperimentStore.create(tmp_path / "exp", _plan((1, 2, 3, 4)))
    first, second, third, fourth = store.runs()["run_id"]
    for seed, run_id in enumerate((first, second), start=1):
        store.mark_running(run_id)
        store.record_success(run_id, _table(seed), {"accuracy": 0.5}, {"torch": "2"}, {"total_seconds": 1.0})
    store.mark_running(third)
    store.record_failure(third, "boom")
    before = store.runs().drop(columns=["started_at", "finished_at"])  # times are the records' own
    predictions = store.predictions()
    (store.path / CATALOG).unlink()

    with pytest.raises(SeedscopeError, match=r"the catalog of .* is missing \(catalog.sqlite\); `seedscope verify .* --rebuild`"):
        ExperimentStore.open(store.path)
    with pytest.raises(SystemExit) as exit_info:
        main(["verify", str(store.path)])
    assert exit_info.value.code == 2 and "--rebuild makes it again" in capsys.readouterr().err
    main(["verify", str(store.path), "--rebuild"])  # exit 0: rebuilt, then checked sound
    assert "catalog rebuilt from plan.json and the result records (2 done, 1 failed, 1 pending)" in capsys.readouterr().out
    rebuilt = ExperimentStore.open(store.path)
    pd.testing.assert_frame_equal(rebuilt.runs().drop(columns=["started_at", "finished_at"]), before)
    pd.testing.assert_frame_equal(rebuilt.predictions(), predictions)
    assert rebuilt.check() == [] and fourth in {r["run_id"] for r in rebuilt.pending_runs()}


def test_a_damaged_catalog_is_rebuilt_and_kept_aside(tmp_path, capsys):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    _commit(store.path, store.runs()["run_id"][0], 1)
    (store.path / CATALOG).write_bytes(b"not a database at all" * 100)
    assert [p.kind for p in store.verify()] == ["catalog"]
    main(["verify", str(store.path), "--rebuild"])
    said = capsys.readouterr().out
    assert "(1 done, 2 pending); the old catalog is kept as" in said and "catalog.sqlite.damaged" in said
    assert (store.path / "catalog.sqlite.damaged").read_bytes().startswith(b"not a database")
    assert ExperimentStore.open(store.path).runs()["status"].tolist() == ["done", "pending", "pending"]
    main(["verify", str(store.path), "--rebuild"])  # a sound catalog is left as it is
    assert "the catalog is sound; nothing to rebuild" in capsys.readouterr().out


def test_a_store_without_plan_json_cannot_be_rebuilt_and_a_lost_catalog_is_never_overwritten(tmp_path):
    plan = _plan()
    store = ExperimentStore.create(tmp_path / "exp", plan)
    _commit(store.path, store.runs()["run_id"][0], 1)
    (store.path / CATALOG).unlink()
    with pytest.raises(SeedscopeError, match="holds an experiment whose catalog is missing"):
        ExperimentStore.create(store.path, plan)  # a new sweep there would lose the records
    (store.path / "plan.json").unlink()
    with pytest.raises(SeedscopeError, match="keeps no plan.json .* restore catalog.sqlite from a backup"):
        ExperimentStore.rebuild(store.path)


def test_a_store_this_user_cannot_write_is_read_as_it_is(tmp_path, monkeypatch):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    run_id = store.runs()["run_id"][0]
    _commit(store.path, run_id, 1)
    monkeypatch.setattr(os, "access", lambda path, mode: mode != os.W_OK)  # as a teammate reading a shared store
    opened = ExperimentStore.open(store.path)
    assert opened.runs()["status"].tolist() == ["pending"] * 3 and opened.verify() == []  # waiting, not a problem
    monkeypatch.undo()
    assert ExperimentStore.open(store.path).runs()["status"].iloc[0] == "done"


def test_a_record_names_its_files_and_a_start_marker_is_not_a_result(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    run_id = store.runs()["run_id"][0]
    write_start(store.path, run_id, 3, "2026-12-01T10:00:00.000+00:00")
    assert read_record(start_path(store.path, run_id), run_id)[1].endswith("has the status 'started'")
    assert read_record(start_path(store.path, run_id), run_id, ("started",))[0]["attempt"] == 3
    record = _commit(store.path, run_id, 1, attempt=3).record
    assert record["n_predictions"] == 5 and record["status"] == "done" and record["staged"]["predictions"]
    assert read_record(record_path(store.path, run_id), "other")[1].endswith("is the record of run " + repr(run_id))
