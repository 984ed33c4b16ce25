"""``seedscope status``: the runs of an experiment directory, and exit 2 on a wrong path."""

from __future__ import annotations

import sqlite3

import pandas as pd
import pytest

from seedscope.cli import main
from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import ExperimentStore


@pytest.fixture
def store(tmp_path):
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["cola"], ["org/tiny-bert"], [42, 52, 62])))
    done, failed, _ = [r["run_id"] for r in store.pending_runs()]
    store.mark_running(done)
    store.record_success(done, pd.DataFrame({"run": 1, "example_id": ["0", "1"], "prediction": [1, 0]}),
                         {"mcc": 0.41234, "accuracy": 0.5}, {}, {"total_seconds": 75.0})
    store.mark_running(failed)
    store.record_failure(failed, "Traceback (most recent call last):\nValueError: the model has no classification head")
    return store


def test_status_lists_every_run(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    main(["status", str(store.path)])
    out = capsys.readouterr().out
    assert "3 runs: 1 done, 1 failed, 1 pending" in out
    lines = {line.split("│")[1].strip(): line for line in out.splitlines() if "cola__tiny-bert" in line}
    assert "done" in lines["cola__tiny-bert__full__s42"] and "mcc 0.4123" in lines["cola__tiny-bert__full__s42"]
    assert "1m15.0s" in lines["cola__tiny-bert__full__s42"]
    assert "ValueError: the model has no classification head" in lines["cola__tiny-bert__full__s52"]
    assert "Traceback" not in out and "pending" in lines["cola__tiny-bert__full__s62"]
    assert "integrity" not in out


def test_status_shows_a_runs_throughput_and_nothing_for_a_run_stored_without_it(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "250")
    run_id = "cola__tiny-bert__full__s62"  # the pending one (a failed run keeps its result until --resume)
    store.mark_running(run_id)
    store.record_success(run_id, pd.DataFrame({"run": 1, "example_id": ["0", "1"], "prediction": [1, 0]}),
                         {"mcc": 0.2, "accuracy": 0.5}, {},
                         {"total_seconds": 5.0, "tokens_per_second": 1520.0, "padding_fraction": 0.12, "mfu": 0.034})
    main(["status", str(store.path)])
    lines = {line.split("│")[1].strip(): line for line in capsys.readouterr().out.splitlines() if "cola__" in line}
    assert "1.5k tok/s, pad 12%, MFU 3.4%" in lines[run_id]
    assert "tok/s" not in lines["cola__tiny-bert__full__s42"]  # stored before throughput was recorded


def test_status_failed_shows_the_full_error_and_integrity_problems(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    store.prediction_path(store.pending_runs()[0]["run_id"]).write_bytes(b"orphan")
    with pytest.raises(SystemExit) as exit_info:  # integrity problems: exit 1, as `seedscope verify`
        main(["status", str(store.path), "--failed"])
    assert exit_info.value.code == 1
    out = capsys.readouterr().out
    assert "Traceback" in out and "s42" not in out.split("integrity")[0]
    assert "integrity: " in out and "(a write that did not finish)" in out


def test_status_of_a_directory_that_is_not_a_store(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["status", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "is not a seedscope experiment directory (no catalog.sqlite)" in capsys.readouterr().err


def test_status_of_a_catalog_without_the_runs_table(tmp_path, capsys):
    with sqlite3.connect(tmp_path / "catalog.sqlite") as db:
        db.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        db.execute("INSERT INTO meta VALUES ('schema_version', '1')")
    with pytest.raises(SystemExit) as exit_info:
        main(["status", str(tmp_path)])
    assert exit_info.value.code == 2
    assert "catalog.sqlite is not a readable seedscope catalog (no plan or runs table)" in capsys.readouterr().err


def test_status_of_a_name_too_long(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["status", str(tmp_path / ("x" * 300))])
    assert exit_info.value.code == 2
    assert "cannot be read (File name too long)" in capsys.readouterr().err


def test_status_of_a_store_with_a_damaged_run_entry(store, capsys):
    done = store.runs()["run_id"].iloc[0]
    with sqlite3.connect(store.path / "catalog.sqlite") as db:
        db.execute("UPDATE runs SET metrics_json = '{\"mcc\": 0.4' WHERE run_id = ?", (done,))
    with pytest.raises(SystemExit) as exit_info:
        main(["status", str(store.path)])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    err = " ".join(captured.err.split())
    assert f"run {done} is damaged in the catalog" in err and "its metrics_json is not JSON" in err
    assert f"`seedscope verify {store.path}` lists every problem" in err and "--resume redoes the run" in err
    assert "Traceback" not in captured.out + captured.err and len(captured.err.strip().splitlines()) <= 3
