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


def _many(store, monkeypatch, full_table: int = 2, full_runs: int | None = None):
    """The store as a large one looks: fewer runs listed in full (and, with ``full_runs``, read at a glance)."""
    import seedscope.cli.status as status_cli
    import seedscope.workflows.status as status_workflow

    monkeypatch.setattr(status_cli, "FULL_TABLE_RUNS", full_table)
    if full_runs is not None:
        monkeypatch.setattr(status_workflow, "FULL_RUNS", full_runs)


def test_a_large_store_gets_the_summary_and_the_runs_that_need_attention(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    _many(store, monkeypatch, full_runs=2)
    main(["status", str(store.path)])
    out = capsys.readouterr().out
    assert "3 runs: 1 done, 1 failed, 1 pending" in out and "Runs that need attention: 1" in out
    attention = [line for line in out.splitlines() if "cola__tiny-bert" in line]
    assert len(attention) == 1 and "s52" in attention[0] and "ValueError: the model has no classification head" in attention[0]
    assert "1m15.0s" not in out  # no full table
    assert "at a glance: the files of the 1 finished runs are there; `seedscope verify" in " ".join(out.split())
    assert "time remaining ≈" in out and "for 2 run(s) to do (from 1 finished run(s)" in out


def test_all_lists_every_run_and_reads_everything(store, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    _many(store, monkeypatch, full_runs=2)
    main(["status", str(store.path), "--all"])
    out = capsys.readouterr().out
    assert sum("cola__tiny-bert" in line for line in out.splitlines()) == 3 and "1m15.0s" in out
    assert "at a glance" not in out


def test_nothing_needs_attention(tmp_path, capsys, monkeypatch):
    store = ExperimentStore.create(tmp_path / "exp", plan_to_dict(seed_sweep(["cola"], ["org/m"], [1, 2, 3])))
    _many(store, monkeypatch)
    main(["status", str(store.path)])
    out = capsys.readouterr().out
    assert "no run needs attention (none failed, none running too long); --all lists every run" in out
    assert "3 run(s) to do; the time remaining is known once one has finished" in out


def test_json_holds_every_run_the_counts_and_the_time_left(store, tmp_path, monkeypatch):
    import json

    _many(store, monkeypatch, full_runs=1)
    main(["status", str(store.path), "--json", str(tmp_path / "status.json")])
    document = json.loads((tmp_path / "status.json").read_text())
    assert document["counts"] == {"done": 1, "failed": 1, "pending": 1} and document["n_runs"] == 3
    from seedscope.workflows.costing import remaining_seconds

    assert document["to_do"] == 2 and [document["remaining_seconds"], document["remaining_based_on"]] == list(
        remaining_seconds(store))
    assert [a["run_id"] for a in document["attention"]] == ["cola__tiny-bert__full__s52"]
    assert document["full"] is True and document["problems"] == []
    first = document["runs"][0]
    assert first["run_id"] == "cola__tiny-bert__full__s42" and first["metrics"] == {"mcc": 0.41234, "accuracy": 0.5}
    assert first["seed"] == 42 and document["runs"][2]["duration_s"] is None


def test_json_to_a_folder_is_one_line_and_exit_2(store, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["status", str(store.path), "--json", str(tmp_path)])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "is a folder; name a file to write" in err and len(err.strip().splitlines()) == 1
