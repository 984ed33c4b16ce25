"""The experiment store: catalog + atomic Parquet files, resume, refusal, integrity, threads."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import CATALOG, ExperimentStore, plan_hash

REPO = Path(__file__).resolve().parents[2]


def _plan(tasks=("rte",), seeds=(42, 52, 62), **hparams) -> dict:
    return plan_to_dict(seed_sweep(list(tasks), ["models/minilm"], list(seeds), hparams=hparams or None))


def _predictions(n=4, seed=0, classes=2) -> pd.DataFrame:
    """Integer codes and prob_<code> columns, as a classification head produces them."""
    rng = np.random.default_rng(seed)
    probs = rng.dirichlet(np.ones(classes), size=n)
    table = pd.DataFrame({"run": "ignored", "example_id": [str(i) for i in range(n)],
                          "prediction": probs.argmax(axis=1), "label": rng.integers(0, classes, n)})
    for c in range(classes):
        table[f"prob_{c}"] = probs[:, c]
    return table


def _finish(store: ExperimentStore, run_id: str, seed=0, **kwargs) -> pd.DataFrame:
    table = _predictions(seed=seed)
    store.mark_running(run_id)
    store.record_success(run_id, table, {"accuracy": 0.5, "mcc": float("nan")}, {"torch": "2.x", "device": {"type": "cpu"}},
                         {"train_s": 1.0, "total_seconds": 2.5}, **kwargs)
    return table


def test_create_writes_the_plan_and_pending_runs(tmp_path):
    plan = _plan(learning_rate=1e-5)
    store = ExperimentStore.create(tmp_path / "exp", plan)
    assert store.plan() == plan and store.plan_hash() == plan_hash(plan)
    runs = store.runs()
    assert runs["run_id"].tolist() == [r["run_id"] for r in plan["runs"]]
    assert runs["status"].eq("pending").all() and runs["seed"].tolist() == [42, 52, 62]
    assert runs[["model_init", "data_order", "optimisation"]].iloc[1].tolist() == [52, 52, 52]
    assert [r["run_id"] for r in store.pending_runs()] == runs["run_id"].tolist()
    assert store.pending_runs()[0]["hparams"] == {"learning_rate": 1e-5}
    assert sorted(p.name for p in (tmp_path / "exp").iterdir()) == [CATALOG, "plan.json", "predictions", "results"]


def test_plan_hash_is_canonical():
    plan = _plan()
    reordered = {"runs": [dict(reversed(list(run.items()))) for run in plan["runs"]]}
    assert plan_hash(plan) == plan_hash(reordered)
    assert plan_hash(plan) != plan_hash(_plan(seeds=(42, 52)))


def test_round_trip_of_predictions_with_label_names_and_prob_columns(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    tables = {run["run_id"]: _finish(store, run["run_id"], seed=i) for i, run in enumerate(store.pending_runs())}
    out = store.predictions()
    assert out.columns.tolist() == ["task", "model", "run", "example_id", "prediction", "label",
                                    "prob_entailment", "prob_not_entailment"]
    assert out["run"].unique().tolist() == ["42", "52", "62"] and out["task"].eq("rte").all()
    assert out["model"].eq("minilm").all()
    names = np.array(["entailment", "not_entailment"])
    for (run_id, table), (_, got) in zip(tables.items(), out.groupby("run", sort=False)):
        assert got["prediction"].tolist() == names[table["prediction"]].tolist()
        assert got["label"].tolist() == names[table["label"]].tolist()
        np.testing.assert_array_equal(got["prob_not_entailment"], table["prob_1"])  # bit-exact through Parquet
    runs = store.runs()
    assert runs["status"].eq("done").all() and runs["n_predictions"].tolist() == [4, 4, 4]
    assert runs["primary_metric"].iloc[0] == "accuracy" and runs["primary_value"].iloc[0] == 0.5
    assert runs["metrics"].iloc[0] == {"accuracy": 0.5, "mcc": None}  # NaN is stored as null
    assert runs["duration_s"].iloc[0] == 2.5 and runs["timings"].iloc[0]["train_s"] == 1.0
    env = store.environment()
    assert sorted(env.columns) == ["device.type", "run_id", "torch"] and len(env) == 3 and env["run_id"].is_unique
    assert store.check() == []


def test_names_already_given_and_bool_labels_and_regression_stay_readable(tmp_path):
    plan = plan_to_dict(seed_sweep(["boolq", "stsb"], ["m"], [1, 2]))
    store = ExperimentStore.create(tmp_path / "exp", plan)
    boolq, _, stsb, _ = [r["run_id"] for r in plan["runs"]]
    store.mark_running(boolq)
    store.record_success(boolq, pd.DataFrame({"run": 1, "example_id": [0, 1], "prediction": [True, False],
                                              "label": ["True", "True"]}), {"accuracy": 0.5})
    store.mark_running(stsb)
    store.record_success(stsb, pd.DataFrame({"run": 1, "example_id": ["a", "b"], "prediction": [1.25, 4.5],
                                             "label": [1.0, 5.0], "task": "old", "model": "old"}),
                         {"pearson": np.float32(0.5), "mse": np.float64("inf")})
    assert store.runs().set_index("run_id").loc[stsb, "metrics"] == {"pearson": 0.5, "mse": None}
    assert store.predictions(task="boolq")["prediction"].tolist() == ["True", "False"]
    assert store.predictions(task="sts-b")["prediction"].tolist() == [1.25, 4.5]
    with pytest.raises(SeedscopeError, match="has no finished run for task cola"):
        store.predictions(task="cola")


def test_lora_runs_form_their_own_model_group(tmp_path):
    plan = {"runs": _plan(seeds=(1,))["runs"] + plan_to_dict(seed_sweep(["rte"], ["models/minilm"], [1], "lora"))["runs"]}
    store = ExperimentStore.create(tmp_path / "exp", plan)
    for run in store.pending_runs():
        _finish(store, run["run_id"])
    assert sorted(store.predictions()["model"].unique()) == ["minilm", "minilm-lora"]
    assert store.predictions(model="minilm-lora")["run"].unique().tolist() == ["1"]


def test_failed_run_keeps_its_error_and_others_go_on(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    first, second, third = [r["run_id"] for r in store.pending_runs()]
    store.mark_running(first)
    store.record_failure(first, "RuntimeError: CUDA out of memory")
    _finish(store, second)
    runs = store.runs().set_index("run_id")
    assert runs.loc[first, "status"] == "failed" and runs.loc[first, "error"] == "RuntimeError: CUDA out of memory"
    assert runs.loc[first, "duration_s"] >= 0 and runs.loc[second, "status"] == "done"
    assert [r["run_id"] for r in store.pending_runs()] == [first, third]
    assert store.predictions()["run"].unique().tolist() == ["52"]


def test_resume_keeps_done_runs_and_redoes_everything_else(tmp_path):
    plan = _plan(seeds=(1, 2, 3, 4))
    store = ExperimentStore.create(tmp_path / "exp", plan)
    done, lost, failed, running = [r["run_id"] for r in plan["runs"]]
    _finish(store, done)
    _finish(store, lost)
    store.prediction_path(lost).unlink()  # done in the catalog, file gone
    store.mark_running(failed)
    store.record_failure(failed, "boom")
    store.mark_running(running)  # killed while training
    kept = store.prediction_path(done).stat().st_mtime_ns

    resumed = ExperimentStore.create(tmp_path / "exp", plan, resume=True)
    assert [r["run_id"] for r in resumed.pending_runs()] == [lost, failed, running]
    runs = resumed.runs().set_index("run_id")
    assert runs["status"].to_dict() == {done: "done", lost: "pending", failed: "pending", running: "pending"}
    assert runs["error"].isna().all()  # a pending run shows no stale error from its last attempt
    assert resumed.prediction_path(done).stat().st_mtime_ns == kept
    for run_id in (lost, failed, running):
        _finish(resumed, run_id)
    assert resumed.runs().set_index("run_id").loc[done, "attempts"] == 1
    assert resumed.runs().set_index("run_id").loc[running, "attempts"] == 2
    table = resumed.predictions()
    assert len(table) == 4 * 4 and not table.duplicated(["run", "example_id"]).any()  # nothing duplicated
    assert resumed.check() == []


def test_existing_directory_is_refused_unless_resuming_the_same_plan(tmp_path):
    plan = _plan()
    ExperimentStore.create(tmp_path / "exp", plan)
    before = sorted(p.name for p in (tmp_path / "exp").rglob("*"))
    with pytest.raises(SeedscopeError, match="already holds this experiment; pass --resume"):
        ExperimentStore.create(tmp_path / "exp", plan)
    with pytest.raises(SeedscopeError, match=r"holds a different plan \(3 stored runs vs 2 requested, missing run "
                                             r"rte__minilm__full__s62\)"):
        ExperimentStore.create(tmp_path / "exp", _plan(seeds=(42, 52)), resume=True)
    with pytest.raises(SeedscopeError, match=r"different plan \(run rte__minilm__full__s42 differs in hparams\)"):
        ExperimentStore.create(tmp_path / "exp", _plan(learning_rate=3e-5), resume=True)
    assert sorted(p.name for p in (tmp_path / "exp").rglob("*")) == before  # nothing written


def test_non_store_directories_and_files_are_refused(tmp_path):
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(SeedscopeError, match="busy is not empty and is not a seedscope experiment directory"):
        ExperimentStore.create(tmp_path / "busy", _plan())
    with pytest.raises(SeedscopeError, match="nothing to resume: .*busy holds no experiment .no catalog.sqlite.; to "
                                             "start a new sweep there, run the same command without --resume"):
        ExperimentStore.create(tmp_path / "busy", _plan(), resume=True)
    with pytest.raises(SeedscopeError, match="nothing to resume: .*nowhere does not exist"):
        ExperimentStore.create(tmp_path / "nowhere", _plan(), resume=True)
    (tmp_path / "file").write_text("x")
    with pytest.raises(SeedscopeError, match="file is a file"):
        ExperimentStore.create(tmp_path / "file", _plan())
    (tmp_path / "empty").mkdir()
    assert ExperimentStore.create(tmp_path / "empty", _plan()).runs().shape[0] == 3
    with pytest.raises(SeedscopeError, match="nowhere is not a seedscope experiment directory"):
        ExperimentStore.open(tmp_path / "nowhere")
    assert not (tmp_path / "nowhere").exists()


def test_unusable_paths_are_one_clear_error(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(SeedscopeError, match=r"cannot create the experiment directory .*file/exp: Not a directory"):
        ExperimentStore.create(tmp_path / "file" / "exp", _plan())
    with pytest.raises(SeedscopeError, match="cannot create the experiment directory .*: File name too long"):
        ExperimentStore.create(tmp_path / ("x" * 300), _plan())
    with pytest.raises(SeedscopeError, match=r"cannot be read \(File name too long\)"):
        ExperimentStore.open(tmp_path / ("x" * 300))
    assert [p.name for p in tmp_path.iterdir()] == ["file"]


@pytest.mark.parametrize(
    ("plan", "message"),
    [({}, "non-empty list of runs"), ({"runs": [{"run_id": "a"}]}, "plan run 0 lacks task, model, method, seeds"),
     ({"runs": [{"run_id": "a", "task": "t", "model": "m", "method": "full", "seeds": {}}] * 2}, "run id a twice"),
     ({"runs": [{"run_id": "a", "task": "t", "model": "m", "method": "full", "seeds": {}, "x": float("nan")}]},
      "cannot be stored as JSON")],
)
def test_bad_plans(tmp_path, plan, message):
    with pytest.raises(SeedscopeError, match=message):
        ExperimentStore.create(tmp_path / "exp", plan)
    assert not (tmp_path / "exp").exists()


def test_bad_predictions_and_unknown_runs(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    run_id = store.pending_runs()[0]["run_id"]
    with pytest.raises(SeedscopeError, match="predictions of run .*missing column"):
        store.record_success(run_id, pd.DataFrame({"run": [1], "example_id": [1]}), {})
    with pytest.raises(SeedscopeError, match="prediction value.* 2 are not labels of glue-rte"):
        store.record_success(run_id, pd.DataFrame({"run": 1, "example_id": [1], "prediction": [2]}), {})
    with pytest.raises(SeedscopeError, match="prob_maybe names no class of glue-rte"):
        store.record_success(run_id, pd.DataFrame({"run": 1, "example_id": [1], "prediction": [0], "prob_maybe": [1.0]}), {})
    with pytest.raises(SeedscopeError, match="run nope is not part of this experiment's plan"):
        store.mark_running("nope")
    with pytest.raises(SeedscopeError, match="run nope is not part"):
        store.record_success("nope", _predictions(), {})
    assert store.check() == [] and not list((tmp_path / "exp" / "predictions").iterdir())


def test_newer_catalog_schema_is_refused(tmp_path):
    ExperimentStore.create(tmp_path / "exp", _plan())
    with sqlite3.connect(tmp_path / "exp" / CATALOG) as db:
        db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(SeedscopeError, match="catalog schema 99; this seedscope reads up to 2"):
        ExperimentStore.open(tmp_path / "exp")


def test_check_reports_integrity_problems(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    first, second, third = [r["run_id"] for r in store.pending_runs()]
    _finish(store, first)
    _finish(store, second)
    store.prediction_path(first).unlink()
    _predictions(n=2).to_parquet(store.prediction_path(second))  # 2 rows where 4 were recorded
    _predictions().to_parquet(store.prediction_path(third))  # written, never recorded
    _predictions().to_parquet(store.path / "predictions" / "stranger.parquet")
    (store.path / "predictions" / ".x.parquet.tmp").write_bytes(b"half")
    with pytest.raises(SeedscopeError, match=f"run {first} is done in the catalog but .* is missing"):
        store.predictions()
    problems = store.check()
    assert len(problems) == 5
    assert f"run {first} is done in the catalog but" in problems[0]
    assert "holds 2 predictions, the catalog says 4" in problems[1]
    assert f"exists but run {third} is pending" in problems[2]
    assert "stranger.parquet belongs to no run" in problems[3] and "temporary file" in problems[4]
    store.prediction_path(second).write_bytes(b"not parquet")
    assert "cannot be read" in store.check()[1]


KILL_SCRIPT = """
import os, signal, sys
import pandas as pd
import seedscope.store.commit as commit
from seedscope.store import ExperimentStore

store = ExperimentStore.open(sys.argv[1])
run_id, stage = sys.argv[2], sys.argv[3]
table = pd.DataFrame({"run": 0, "example_id": ["0", "1"], "prediction": [0, 1], "label": [0, 1]})
kill = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
if stage == "mid-parquet":       # half of the staged Parquet file written
    def half(target, data):
        (target.parent / f".{target.name}.0dead0.tmp").write_bytes(data[:10])
        kill()
    commit.staged_file = half
elif stage == "after-claim":     # the result record claimed, its files not yet placed
    commit.place = kill
else:                            # files placed, the catalog not yet updated
    ExperimentStore._finish = kill
store.mark_running(run_id)
store.record_success(run_id, table, {"accuracy": 1.0})
"""


@pytest.mark.parametrize("stage", ["mid-parquet", "after-claim", "before-catalog"])
def test_a_killed_write_is_redone_or_taken_in(tmp_path, stage):
    """Killed before its result record is claimed, a run is redone on resume; after, its result is the record and the
    next command that opens the store takes it in (placing the staged file where the kill stopped that)."""
    plan = _plan()
    store = ExperimentStore.create(tmp_path / "exp", plan)
    run_id = plan["runs"][0]["run_id"]
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(KILL_SCRIPT), str(store.path), run_id, stage],
                            env={**os.environ, "PYTHONPATH": str(REPO / "src")}, capture_output=True, text=True)
    assert result.returncode == -9, result.stderr
    assert store.runs()["status"].iloc[0] == "running"
    if stage == "mid-parquet":
        problems = store.check()
        assert not store.prediction_path(run_id).exists()
        assert len(problems) == 1 and "temporary file left by an interrupted write" in problems[0]
        resumed = ExperimentStore.create(store.path, plan, resume=True)
        assert [r["run_id"] for r in resumed.pending_runs()] == [r["run_id"] for r in plan["runs"]]
        assert resumed.check() == [] and not resumed.prediction_path(run_id).exists()  # nothing left of the killed write
        _finish(resumed, run_id)
    else:
        assert (store.path / "results" / f"{run_id}.json").is_file()
        assert store.prediction_path(run_id).exists() == (stage == "before-catalog")
        resumed = ExperimentStore.open(store.path)  # takes the result in, placing its file first if need be
        assert resumed.check() == [] and resumed.prediction_path(run_id).is_file()
        assert resumed.predictions()["prediction"].tolist() == ["entailment", "not_entailment"]
        assert [r["run_id"] for r in resumed.pending_runs()] == [r["run_id"] for r in plan["runs"][1:]]
    assert resumed.check() == [] and resumed.runs()["status"].iloc[0] == "done"
    assert resumed.runs()["attempts"].iloc[0] == (2 if stage == "mid-parquet" else 1)  # the killed start counts


def test_concurrent_writes_from_threads_of_one_process(tmp_path):
    plan = _plan(tasks=("rte", "cola", "sst2", "cb"), seeds=range(1, 9))
    store = ExperimentStore.create(tmp_path / "exp", plan)

    def work(item):
        i, run = item
        if i % 5 == 4:
            store.mark_running(run["run_id"])
            store.record_failure(run["run_id"], f"error {i}")
        else:
            _finish(store, run["run_id"], seed=i)

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(work, enumerate(store.pending_runs())))
    runs = store.runs()
    assert runs["status"].value_counts().to_dict() == {"done": 26, "failed": 6}
    assert runs["attempts"].eq(1).all() and store.check() == []
    assert len(store.predictions()) == 26 * 4
