"""A catalog another process holds: readers say at once that it is locked (naming the process), never damaged;
a write transaction left open or a sweep recording runs does not stop them. Every wait here is bounded."""

from __future__ import annotations

import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.plan import plan_to_dict, seed_sweep
from seedscope.store import CATALOG, ExperimentStore
from seedscope.store import catalog as catalog_module
from seedscope.store.locks import READ_WAIT_S, CatalogLocked, lock_holders

#: SQLite's locks (the standard library's sqlite3): no dependency's version changes them (not run at the floors)
pytestmark = pytest.mark.once

REPO = Path(__file__).resolve().parents[2]
#: what a test waits at most for one refused read (the reader's wait, and a margin for a loaded machine)
PROMPT_S = READ_WAIT_S + 8


def _plan() -> dict:
    return plan_to_dict(seed_sweep(["rte"], ["models/minilm"], [42, 52, 62]))


def _store(tmp_path, done: int = 3) -> ExperimentStore:
    store = ExperimentStore.create(tmp_path / "exp", _plan())
    for run_id in [r["run_id"] for r in store.pending_runs()][:done]:
        store.mark_running(run_id)
        store.record_success(run_id, pd.DataFrame({"run": "x", "example_id": [str(i) for i in range(20)],
                                                   "prediction": np.arange(20) % 2, "label": np.arange(20) % 2}),
                             {"accuracy": 1.0})
    return store


@contextmanager
def held(path: Path, begin: str, seconds: float = 60):
    """Another process with a write transaction open on ``path`` (``BEGIN begin`` and one uncommitted write)."""
    code = (f"import sqlite3, sys, time; db = sqlite3.connect({str(path)!r}, isolation_level=None); "
            f"db.execute('BEGIN {begin}'); db.execute('UPDATE meta SET value = value'); print('held', flush=True); "
            f"time.sleep({seconds})")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=30)


def _timed(cli, args) -> tuple[int, str, float]:
    started = time.monotonic()
    code, out, err = cli(args)
    return code, " ".join((out + err).split()), time.monotonic() - started


def test_a_catalog_another_process_writes_is_locked_at_once_and_never_called_damaged(tmp_path, cli):
    store = _store(tmp_path)
    with held(store.path / CATALOG, "EXCLUSIVE") as holder:
        for args in (["status", str(store.path)], ["verify", str(store.path)], ["analyze", str(store.path)],
                     ["report", str(store.path), "--html", str(tmp_path / "r.html")]):
            code, said, seconds = _timed(cli, args)
            assert code == 2 and seconds < PROMPT_S * 2, (args, code, seconds, said)
            assert f"the experiment directory {store.path} is locked: another process" in said, said
            assert "nothing is damaged" in said and "Traceback" not in said
            assert "seedscope verify" not in said and "not a readable" not in said, said
            if Path("/proc/locks").is_file():
                assert f"pid {holder.pid}: {sys.executable} -c import sqlite3" in said, said
        with pytest.raises(CatalogLocked):
            store.verify()  # a lock is not a "catalog" problem of the store
    assert not (tmp_path / "r.html").exists()
    assert cli(["verify", str(store.path)])[0] == 0  # the holder gone, the store reads as sound


def test_a_write_transaction_left_open_does_not_stop_readers(tmp_path, cli):
    """SQLite's rollback journal lets readers read the last committed state while a writer holds its reservation."""
    store = _store(tmp_path)
    with held(store.path / CATALOG, "IMMEDIATE"):
        code, said, seconds = _timed(cli, ["status", str(store.path)])
        assert code == 0 and "3 done" in said and seconds < PROMPT_S
        assert cli(["verify", str(store.path)])[0] == 0


def test_readers_never_fail_while_a_sweep_records_runs(tmp_path):
    """Another process records runs as a sweep does (one BEGIN IMMEDIATE transaction each, synchronous FULL), one
    every 50 ms (a run records two; no run is that fast): every read in the meantime succeeds, waiting at most for a
    commit."""
    store = _store(tmp_path, done=2)
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from seedscope.store import ExperimentStore; store = ExperimentStore.open(sys.argv[1]); "
        "run = store.runs()['run_id'].iloc[2]; end = time.monotonic() + 4\n"
        "while time.monotonic() < end: store.catalog.mark_running(run); time.sleep(0.05)"), str(store.path)],
        env={"PYTHONPATH": str(REPO / "src")})
    reads = 0
    try:
        while writer.poll() is None:
            opened = ExperimentStore.open(store.path)
            assert len(opened.runs()) == 3 and opened.verify(full=False) == []
            reads += 1
    finally:
        writer.kill()
        writer.wait(timeout=30)
    assert writer.returncode == 0 and reads > 5
    assert ExperimentStore.open(store.path).runs()["attempts"].iloc[2] > 2


def test_a_writer_waits_for_another_writer_then_says_locked(tmp_path, monkeypatch):
    store = _store(tmp_path)
    monkeypatch.setattr(catalog_module, "WRITE_WAIT_S", 0.2)  # a sweep's writer waits a minute
    run_id = store.runs()["run_id"].iloc[0]
    with held(store.path / CATALOG, "IMMEDIATE"):
        with pytest.raises(CatalogLocked, match="is locked: another process"):
            store.mark_running(run_id)
    store.mark_running(run_id)  # the holder gone, the write goes through
    assert store.runs()["status"].iloc[0] == "running"


@pytest.mark.skipif(not Path("/proc/locks").is_file(), reason="the lock table of Linux")
def test_lock_holders_names_the_process_holding_a_write_lock(tmp_path):
    store = _store(tmp_path)
    assert lock_holders(store.path / CATALOG) == [] and lock_holders(tmp_path / "missing") == []
    with held(store.path / CATALOG, "EXCLUSIVE") as holder:
        assert lock_holders(store.path / CATALOG) == [holder.pid]
