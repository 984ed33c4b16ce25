"""Faults injected for real: a sweep killed (SIGKILL) at random moments and resumed, and Ctrl-C.

The sweep runs as its own process (``python -m seedscope``), as a user's would. After every
kill the store must hold each finished run once with its file unchanged, and the resumed
sweep must end with exactly the predictions of an uninterrupted one.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seedscope.cli import main
from seedscope.store import CATALOG, ExperimentStore

#: seedscope's own handling of SIGKILL and Ctrl-C: no dependency's version changes it (not run at the floors)
pytestmark = pytest.mark.once

REPO = Path(__file__).resolve().parents[2]
TINY = ["--set", "max_train_examples=64", "--set", "max_eval_examples=24", "--set", "max_steps=40",
        "--set", "max_seq_length=48"]
SEEDS = "1,2,3,4"


def _args(model, out, data_dir) -> list[str]:
    return ["sweep", "--task", "rte", "--model", str(model), "--seeds", SEEDS, "--out", str(out),
            "--data-dir", str(data_dir), *TINY]


def _start(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO / "src"), "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}
    # Ctrl-C as a user's terminal delivers it, even when the tests themselves run as a background job: such a
    # job starts with SIGINT ignored, and the sweep would inherit that and never be interrupted
    ignored = signal.getsignal(signal.SIGINT) == signal.SIG_IGN
    return subprocess.Popen([sys.executable, "-m", "seedscope", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env,
                            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)) if ignored else None)


def _statuses(out: Path) -> dict[str, str]:
    """run_id → status, read straight from the catalog (as another process sees it mid-sweep)."""
    if not (out / CATALOG).is_file():
        return {}
    try:
        with sqlite3.connect(f"file:{out / CATALOG}?mode=ro", uri=True, timeout=5) as db:
            return dict(db.execute("SELECT run_id, status FROM runs"))
    except sqlite3.DatabaseError:
        return {}


def _wait_for_a_running_run(out: Path, process: subprocess.Popen, limit: float = 120) -> None:
    deadline = time.monotonic() + limit
    while "running" not in _statuses(out).values() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)


def _checksums(out: Path) -> dict[str, str]:
    """run_id → SHA-256 of every done run."""
    store = ExperimentStore.open(out)
    return {run_id: digest for run_id, (status, _, digest) in store.catalog.checksums().items() if status == "done"}


@pytest.fixture(scope="module")
def reference(tmp_path_factory, tiny_bert, data_dir):
    """The same sweep, uninterrupted."""
    out = tmp_path_factory.mktemp("reference") / "exp"
    main(_args(tiny_bert, out, data_dir))
    return out


def test_sigkill_at_random_moments_then_resume(tmp_path, tiny_bert, data_dir, reference):
    out = tmp_path / "exp"
    rng = random.Random(20261123)
    kept: dict[str, str] = {}
    kills = 0
    for attempt in range(12):
        args = _args(tiny_bert, out, data_dir) + (["--resume"] if (out / CATALOG).is_file() else [])
        process = _start(args)
        if kills < 4:  # once runs execute, kill at a random moment: training, writing or recording a run
            _wait_for_a_running_run(out, process)
            time.sleep(rng.uniform(0.0, 2.5))
        if process.poll() is None and kills < 4:
            process.send_signal(signal.SIGKILL)
            process.communicate()
            kills += 1
        else:
            _, err = process.communicate(timeout=300)
            assert process.returncode == 0, err
            break
        if (out / CATALOG).is_file() and _statuses(out):
            now = _checksums(out)
            assert all(now[run] == digest for run, digest in kept.items()), "a finished file changed after a kill"
            kept = now
    assert kills >= 2, "the sweep finished before it could be killed twice; kill sooner"
    store = ExperimentStore.open(out)
    runs = store.runs()
    assert runs["status"].tolist() == ["done"] * 4 and len(list((out / "predictions").iterdir())) == 4
    assert store.verify() == []
    assert _checksums(out) == _checksums(reference)  # byte-identical to an uninterrupted sweep
    assert store.predictions().equals(ExperimentStore.open(reference).predictions())


def test_ctrl_c_says_how_to_resume_and_exits_130(tmp_path, tiny_bert, data_dir):
    out = tmp_path / "exp"
    process = _start(_args(tiny_bert, out, data_dir))
    _wait_for_a_running_run(out, process)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    resumed = _start(_args(tiny_bert, out, data_dir) + ["--resume"])
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    store = ExperimentStore.open(out)
    assert store.runs()["status"].tolist() == ["done"] * 4 and store.verify() == []


def _workers(pid: int) -> set[int]:
    """The worker processes ``pid`` spawned (not multiprocessing's resource tracker), as Linux lists them."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        found |= {int(child) for child in children if "spawn_main" in _command(int(child))}
    return found


def _command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " ")
    except OSError:
        return ""


def test_ctrl_c_stops_every_packed_worker_and_resume_finishes(tmp_path, tiny_bert, data_dir):
    out = tmp_path / "exp"
    process = _start(_args(tiny_bert, out, data_dir) + ["--parallel", "2"])
    _wait_for_a_running_run(out, process)
    deadline = time.monotonic() + 60
    while len(_workers(process.pid)) < 2 and time.monotonic() < deadline:  # both workers started
        time.sleep(0.1)
    workers = _workers(process.pid)
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted" in err and "--resume" in err and "Traceback" not in err
    assert len(workers) == 2 and not [pid for pid in workers if "spawn_main" in _command(pid)]  # none left behind
    resumed = _start(_args(tiny_bert, out, data_dir) + ["--resume", "--parallel", "2"])
    _, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    store = ExperimentStore.open(out)
    assert store.runs()["status"].tolist() == ["done"] * 4 and store.verify() == []
