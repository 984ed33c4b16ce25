"""Verifying and repairing a store: every corruption found by `verify`, refused by readers, repaired by --resume."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import CATALOG, ExperimentStore


def _plan() -> dict:
    return plan_to_dict(seed_sweep(["rte"], ["models/minilm"], [42, 52, 62]))


def _store(tmp_path, done=3) -> ExperimentStore:
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 20)  # one gold label per example, as in every real sweep
    for run_id in [r["run_id"] for r in store.pending_runs()][:done]:
        table = pd.DataFrame({"run": "x", "example_id": [str(i) for i in range(20)],
                              "prediction": rng.integers(0, 2, 20), "label": labels})
        store.mark_running(run_id)
        store.record_success(run_id, table, {"accuracy": 0.5})
    return store


def test_a_sound_store_verifies(tmp_path, cli):
    store = _store(tmp_path)
    assert store.verify() == []
    code, out, _ = cli(["verify", str(store.path)])
    assert code == 0 and "sound" in out and "3 of 3 runs done" in out


def test_swapped_files_are_caught_refused_and_redone(tmp_path, cli):
    store = _store(tmp_path)
    first, second, third = store.runs()["run_id"]
    a, b = store.prediction_path(first), store.prediction_path(second)
    data_a = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data_a)
    assert [(p.kind, p.run_id) for p in store.verify()] == [("altered", first), ("altered", second)]
    with pytest.raises(SeedscopeError, match=f"is not the file run {first} wrote"):
        store.predictions()
    code, _, err = cli(["analyze", str(store.path)])
    assert code == 2 and "SHA-256 differs" in err and "Traceback" not in err
    code, out, _ = cli(["verify", str(store.path)])
    assert code == 1 and "altered" in out and "the run is redone" in out
    code, _, _ = cli(["status", str(store.path)])
    assert code == 1
    resumed = ExperimentStore.create(store.path, _plan(), resume=True)
    runs = resumed.runs().set_index("run_id")["status"]
    assert runs.to_dict() == {first: "pending", second: "pending", third: "done"}
    assert resumed.verify() == [] and not a.exists() and not b.exists()


def test_truncated_and_short_files(tmp_path):
    store = _store(tmp_path)
    first, second, _ = store.runs()["run_id"]
    path = store.prediction_path(first)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    short = store.prediction_path(second)
    pd.read_parquet(short).head(5).to_parquet(short)
    assert [(p.kind, p.run_id) for p in store.verify()] == [("unreadable", first), ("short", second)]
    resumed = ExperimentStore.create(store.path, _plan(), resume=True)
    assert resumed.runs()["status"].tolist() == ["pending", "pending", "done"] and resumed.verify() == []


def test_stray_and_temporary_files(tmp_path):
    store = _store(tmp_path, done=1)
    stray = store.path / "predictions" / "someone-elses.parquet"
    pd.DataFrame({"a": [1]}).to_parquet(stray)
    (store.path / "predictions" / ".x.parquet.tmp").write_bytes(b"half")
    pending = store.runs()["run_id"].iloc[2]
    pd.DataFrame({"a": [1]}).to_parquet(store.prediction_path(pending))
    assert [p.kind for p in store.verify()] == ["unfinished", "orphan", "temporary"]
    resumed = ExperimentStore.create(store.path, _plan(), resume=True)
    assert resumed.verify() == [] and (store.path / "orphans" / "someone-elses.parquet").is_file()


def _damage_runs_table(path) -> None:
    with sqlite3.connect(path) as db:
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
        root = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'runs'").fetchone()[0]
    with open(path, "r+b") as handle:  # the runs table's b-tree page: cell pointers and cells overwritten
        handle.seek((root - 1) * page_size + 8)
        handle.write(b"\xff" * (page_size - 8))


def test_a_damaged_catalog_is_one_clear_error_everywhere(tmp_path, cli):
    store = _store(tmp_path)
    _damage_runs_table(store.path / CATALOG)
    with pytest.raises(SeedscopeError, match="catalog .* is damaged|cannot be used"):
        ExperimentStore.open(store.path)
    for args in (["status", str(store.path)], ["analyze", str(store.path)],
                 ["report", str(store.path), "--html", str(tmp_path / "r.html")]):
        code, _, err = cli(args)
        assert code == 2 and "Traceback" not in err and "seedscope verify" in err, (args, err)
    assert not (tmp_path / "r.html").exists()
    code, out, _ = cli(["verify", str(store.path)])
    assert code == 1 and "catalog" in out


def test_resuming_a_sweep_with_a_damaged_catalog(tmp_path, tiny_bert, data_dir, cli):
    args = ["sweep", "--task", "rte", "--model", str(tiny_bert), "--seeds", "1", "--out", str(tmp_path / "exp"),
            "--data-dir", str(data_dir), "--set", "max_train_examples=8", "--set", "max_eval_examples=8",
            "--set", "max_steps=1", "--set", "max_seq_length=32"]
    assert cli(args)[0] == 0
    _damage_runs_table(tmp_path / "exp" / CATALOG)
    code, _, err = cli([*args, "--resume"])
    assert code == 2 and "Traceback" not in err and "seedscope verify" in err


def test_a_killed_create_leaves_a_directory_that_can_be_used(tmp_path):
    folder = tmp_path / "exp"
    folder.mkdir()
    (folder / f".{CATALOG}.k3j2.tmp").write_bytes(b"half a catalog")  # killed before the rename
    store = ExperimentStore.create(folder, _plan())
    assert store.verify() == [] and sorted(p.name for p in folder.iterdir()) == [CATALOG, "plan.json", "predictions", "results"]


def test_a_store_written_before_checksums(tmp_path):
    """Schema 1 had no sha256 column: its files are checked by the run they name, and it gains the column when written."""
    store = _store(tmp_path, done=2)
    with sqlite3.connect(store.path / CATALOG) as db:
        db.execute("ALTER TABLE runs DROP COLUMN sha256")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    old = ExperimentStore.open(store.path)
    assert old.verify() == [] and not old.catalog.has_checksums()
    first, second, third = old.runs()["run_id"]
    a, b = old.prediction_path(first), old.prediction_path(second)
    data_a = a.read_bytes()
    a.write_bytes(b.read_bytes())
    b.write_bytes(data_a)
    assert [(p.kind, p.run_id) for p in old.verify()] == [("wrong-run", first), ("wrong-run", second)]
    old.mark_running(third)
    old.record_success(third, pd.read_parquet(a).assign(run="x"), {"accuracy": 0.5})
    assert old.catalog.has_checksums() and old.catalog.checksums()[third][2] is not None
    assert [(p.kind, p.run_id) for p in old.verify()] == [("wrong-run", first), ("wrong-run", second)]


def test_a_store_written_before_checksums_gains_them_for_its_sound_files(tmp_path):
    """Its first write records every sound done file's checksum, so that from then on a done run without one is a
    problem (and the files are checked as every newer store's are)."""
    store = _store(tmp_path, done=2)
    digests = {run_id: digest for run_id, (_, _, digest) in store.catalog.checksums().items()}
    with sqlite3.connect(store.path / CATALOG) as db:
        db.execute("ALTER TABLE runs DROP COLUMN sha256")
        db.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    old = ExperimentStore.open(store.path)
    first, second, third = old.runs()["run_id"]
    old.mark_running(third)
    old.record_failure(third, "out of memory")
    assert {run_id: digest for run_id, (_, _, digest) in old.catalog.checksums().items()} == digests
    assert old.verify() == []


def _set_cell(store: ExperimentStore, run_id: str, column: str, value, table: str = "runs") -> None:
    with sqlite3.connect(store.path / CATALOG) as db:
        db.execute(f"UPDATE {table} SET {column} = ?" + (" WHERE run_id = ?" if table == "runs" else ""),
                   (value, run_id) if table == "runs" else (value,))


@pytest.mark.parametrize("column", ["sha256", "n_predictions"])
def test_a_done_run_whose_catalog_row_lacks_its_checksum(tmp_path, cli, column):
    store = _store(tmp_path)
    first = store.runs()["run_id"].iloc[0]
    _set_cell(store, first, column, None)
    assert [(p.kind, p.run_id) for p in store.verify()] == [("unrecorded", first)]
    code, out, _ = cli(["verify", str(store.path)])
    assert code == 1 and "unrecorded" in out and "sound" not in out
    if column == "sha256":  # a reader cannot check the file either: it refuses rather than trusting it
        code, _, err = cli(["analyze", str(store.path)])
        assert code == 2 and f"run {first} is done but the catalog" in err and "seedscope verify" in err
        assert "Traceback" not in err
    resumed = ExperimentStore.create(store.path, _plan(), resume=True)
    assert resumed.runs()["status"].tolist() == ["pending", "done", "done"] and resumed.verify() == []


def test_a_checksum_that_is_not_one(tmp_path):
    store = _store(tmp_path)
    first = store.runs()["run_id"].iloc[0]
    _set_cell(store, first, "sha256", "abc")
    [problem] = store.verify()
    assert (problem.kind, problem.run_id) == ("unrecorded", first) and "'abc' that is not a SHA-256" in problem.message
    with pytest.raises(SeedscopeError, match=f"run {first} is done but the catalog .* records no valid checksum"):
        store.predictions()


# (column, damaged text, the commands that read the cell and must refuse with exit 2)
#: (cell, damage, the readers it stops); `analyze` reads a run's predictions without the cells they do not need
#: (it names the damaged one in a note: tests/io/test_bad_inputs_store.py), but not without its seeds, which name it
DAMAGED_CELLS = [
    ("metrics_json", '{"accuracy": 0.5', ["status"]),
    ("metrics_json", '[0.5]', ["status"]),
    ("metrics_json", '{"accuracy": "high"}', ["status"]),
    ("seeds_json", 'not json', ["status", "analyze"]),
    ("seeds_json", '{"data_order": "x"}', ["status", "analyze"]),
    ("timings_json", '{"total_seconds": ', ["status"]),
    ("environment_json", '"cpu"', ["report"]),
    ("n_predictions", "abc", ["status"]),
    ("attempts", "many", ["status"]),
    ("duration_s", "long", ["status"]),
]


@pytest.mark.parametrize(("column", "text", "readers"), DAMAGED_CELLS)
def test_a_damaged_catalog_cell_is_found_named_and_repaired(tmp_path, cli, column, text, readers):
    store = _store(tmp_path)
    second = store.runs()["run_id"].iloc[1]
    _set_cell(store, second, column, text)
    [problem] = store.verify()
    assert (problem.kind, problem.run_id) == ("entry", second) and column in problem.message
    code, out, err = cli(["verify", str(store.path)])
    assert code == 1 and "entry" in out and "Traceback" not in out + err
    for reader in readers:
        args = [reader, str(store.path)] + (["--html", str(tmp_path / "r.html")] if reader == "report" else [])
        code, out, err = cli(args)
        assert code == 2 and "Traceback" not in out + err, (reader, err)
        message = " ".join(err.split())
        assert f"run {second} is damaged in the catalog" in message and column in message, (reader, err)
        assert f"seedscope verify {store.path}" in message and "--resume" in message
    if "status" not in readers:  # status reads no environment: it lists the problem under its table
        code, out, _ = cli(["status", str(store.path)])
        assert code == 1 and f"run {second}'s {column}" in " ".join(out.split())
    resumed = ExperimentStore.create(store.path, _plan(), resume=True)
    assert resumed.verify() == [] and resumed.runs()["status"].tolist() == ["done", "pending", "done"]
    assert resumed.runs()["seed"].tolist() == [42, 52, 62]


@pytest.mark.parametrize(("table", "column", "text", "message"), [
    ("plan", "plan_json", '{"runs": [', "its plan cannot be read"),
    ("plan", "plan_json", '{"runs": 3}', "its plan cannot be read"),
    ("meta", "value", "x", "is not a readable seedscope catalog"),
])
def test_a_damaged_plan_or_schema_is_a_catalog_problem(tmp_path, cli, table, column, text, message):
    store = _store(tmp_path)
    _set_cell(store, None, column, text, table=table)
    [problem, *_] = store.verify()
    assert problem.kind == "catalog" and message in problem.message
    code, out, err = cli(["verify", str(store.path)])
    assert code == 1 and "catalog" in out and "Traceback" not in out + err


def test_an_unreadable_prediction_file(tmp_path, cli, monkeypatch):
    """A file without read permission is a problem for verify and one clear error for readers. (Root reads every
    file, so as root the check runs with the effective user nobody, on a store in a folder that user may enter.)"""
    import os
    import shutil
    import tempfile

    as_root = os.geteuid() == 0
    folder = Path(tempfile.mkdtemp()) if as_root else tmp_path
    try:
        folder.chmod(0o755)
        store = _store(folder)
        for path in [store.path, *store.path.rglob("*")]:
            path.chmod(0o755 if path.is_dir() else 0o644)
        first = store.runs()["run_id"].iloc[0]
        store.prediction_path(first).chmod(0)
        if as_root:
            os.seteuid(65534)
        try:
            problems = [(p.kind, p.run_id, "Permission denied" in p.message) for p in store.verify()]
            verified = cli(["verify", str(store.path)])
            analyzed = cli(["analyze", str(store.path)])
        finally:
            if as_root:
                os.seteuid(0)
    finally:
        if as_root:
            shutil.rmtree(folder)
    assert problems == [("unreadable", first, True)]
    assert verified[0] == 1 and "unreadable" in verified[1]
    code, _, err = analyzed
    assert code == 2 and "cannot be read (Permission denied)" in err and "Traceback" not in err


def test_a_glance_finds_what_needs_no_file_read_and_verify_finds_the_rest(tmp_path):
    """``verify(contents=False)`` (``seedscope status`` beyond 1,000 runs): missing, unfinished, stray and
    temporary files and unrecorded checksums; a changed file or a damaged cell only a full check reads."""
    store = _store(tmp_path, done=2)
    first, second, pending = store.runs()["run_id"]
    altered = store.prediction_path(first)
    pd.read_parquet(altered).head(19).to_parquet(altered)  # short and altered, but present
    store.prediction_path(second).unlink()
    pd.DataFrame({"a": [1]}).to_parquet(store.prediction_path(pending))
    pd.DataFrame({"a": [1]}).to_parquet(store.path / "predictions" / "stray.parquet")
    (store.path / "predictions" / ".x.parquet.tmp").write_bytes(b"half")
    _set_cell(store, first, "metrics_json", "{")
    glance = [(p.kind, p.run_id) for p in store.verify(full=False, contents=False)]
    assert glance == [("missing", second), ("unfinished", pending), ("orphan", None), ("temporary", None)]
    full = [(p.kind, p.run_id) for p in store.verify()]
    assert full == [("entry", first), ("short", first)] + glance
    _set_cell(store, first, "sha256", None)
    assert ("unrecorded", first) in [(p.kind, p.run_id) for p in store.verify(full=False, contents=False)]


def test_a_file_intact_to_its_checksum_is_checked_by_its_footer(tmp_path):
    """The bytes the run wrote (their SHA-256 recorded) are not decoded again; a row count changed in the catalog
    alone is still found."""
    store = _store(tmp_path)
    first = store.runs()["run_id"].iloc[0]
    _set_cell(store, first, "n_predictions", 19)
    [problem] = store.verify()
    assert (problem.kind, problem.run_id) == ("short", first) and "holds 20 predictions, the catalog says 19" in problem.message
