"""The store and the sweep command under bad inputs: a store a real (tiny) sweep wrote, damaged or held at test
time, and the sweep's options and cache set wrong.

The rule each case enforces: exit status 2 and one message naming the problem (nothing written), or, where the
input can still be analysed, the analysis with a note naming what is damaged — never a traceback, never a wait.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from seedscope.errors import DamagedEntryWarning, SeedscopeError
from seedscope.io import read_predictions
from seedscope.plan import seed_sweep
from seedscope.runners.checkpoints import CACHE_ENV
from seedscope.store import CATALOG, ExperimentStore
from seedscope.workflows.sweeping import check_cache

TINY = ["--set", "max_train_examples=16", "--set", "max_eval_examples=12", "--set", "max_steps=1",
        "--set", "max_seq_length=32"]


def sweep_args(model, out, data_dir, *more) -> list[str]:
    return ["sweep", "--task", "rte", "--model", str(model), "--seeds", "1,2,3", "--out", str(out),
            "--data-dir", str(data_dir), *TINY, *more]


@pytest.fixture(scope="module")
def swept(tmp_path_factory, tiny_bert, data_dir) -> Path:
    """The store of a real three-seed sweep (tiny BERT, one step each)."""
    from seedscope.cli import main

    out = tmp_path_factory.mktemp("swept") / "exp"
    try:
        main(sweep_args(tiny_bert, out, data_dir))
    except SystemExit as done:
        assert not done.code, done.code
    return out


@pytest.fixture
def store(swept, tmp_path) -> ExperimentStore:
    """A copy of the swept store, this test's to damage."""
    return ExperimentStore(shutil.copytree(swept, tmp_path / "exp"))


def _said(out: str, err: str) -> str:
    return " ".join((out + err).split())


def _set_cell(store: ExperimentStore, run_id: str, column: str, text: str) -> None:
    with sqlite3.connect(store.path / CATALOG) as db:
        db.execute(f"UPDATE runs SET {column} = ? WHERE run_id = ?", (text, run_id))


@pytest.mark.parametrize(("column", "text", "fault"), [
    ("metrics_json", '{"accuracy": 0.5', "is not JSON"),
    ("metrics_json", '{"accuracy": "high"}', "holds 'accuracy': 'high', not a number"),
    ("timings_json", "[1, 2]", "is a JSON list, not an object"),
    ("attempts", "many", "is 'many', not a number"),
])
def test_a_damaged_catalog_cell_is_named_in_a_note_and_the_intact_predictions_are_analysed(
        store, tmp_path, cli, column, text, fault):
    intact = tmp_path / "intact.json"
    assert cli(["analyze", str(store.path), "--n-boot", "50", "--json", str(intact)])[0] == 0
    second = store.runs()["run_id"].iloc[1]
    _set_cell(store, second, column, text)
    damaged = tmp_path / "damaged.json"
    code, out, err = cli(["analyze", str(store.path), "--n-boot", "50", "--json", str(damaged)])
    said = _said(out, err)
    assert code == 0 and "Traceback" not in said, said
    assert f"run {second}'s {column} in the catalog {store.path / CATALOG} {fault}" in said, said
    assert f"`seedscope verify {store.path}` lists every problem" in said
    assert json.loads(damaged.read_text()) == json.loads(intact.read_text())  # the same analysis, from the same files
    with pytest.warns(DamagedEntryWarning, match=f"run {second}'s {column}"):
        assert read_predictions([store.path])["run"].nunique() == 3


@pytest.mark.parametrize("command", ["compare", "subsets"])
def test_every_reader_of_the_predictions_names_a_damaged_catalog_cell(store, swept, tmp_path, cli, command):
    """compare and subsets read the same predictions as analyze, and say the same note (docs/reference/store.md)."""
    second = store.runs()["run_id"].iloc[1]
    _set_cell(store, second, "metrics_json", '{"accuracy": 0.5')
    written = tmp_path / "out.json"
    args = [str(store.path), str(swept), "--json", str(written)]
    args += ["--n-boot", "50", "--n-permutations", "50"] if command == "compare" else ["--subset-size", "6", "--subset-seeds", "20", "--n-boot", "50"]
    code, out, err = cli([command, *args])
    said = _said(out, err)
    assert code == 0 and "Traceback" not in said, said
    assert f"run {second}'s metrics_json in the catalog {store.path / CATALOG} is not JSON" in said, said
    assert said.count(f"run {second}'s metrics_json") == 1 and written.exists()


def test_damaged_seeds_still_stop_the_analysis(store, cli):
    """A run's seeds name it in the analysis: without them its predictions cannot be told apart."""
    second = store.runs()["run_id"].iloc[1]
    _set_cell(store, second, "seeds_json", "not json")
    code, out, err = cli(["analyze", str(store.path)])
    assert code == 2 and f"run {second} is damaged in the catalog" in _said(out, err)


@pytest.mark.once  # SQLite's locks (the standard library)
def test_a_store_another_process_writes_is_locked_at_once(store, cli, tiny_bert, data_dir):
    code = (f"import sqlite3, time; db = sqlite3.connect({str(store.path / CATALOG)!r}, isolation_level=None); "
            "db.execute('BEGIN EXCLUSIVE'); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        for args in (["status", str(store.path)], ["verify", str(store.path)], ["analyze", str(store.path)],
                     sweep_args(tiny_bert, store.path, data_dir, "--resume")):
            started = time.monotonic()
            code, out, err = cli(args)
            said = _said(out, err)
            assert code == 2 and time.monotonic() - started < 15, (args, said)
            assert "is locked: another process" in said and "damaged —" in said and "Traceback" not in said
    finally:
        holder.kill()
        holder.wait(timeout=30)


def test_resuming_an_out_that_holds_no_experiment_is_refused(tmp_path, tiny_bert, data_dir, cli):
    missing = tmp_path / "typo"
    code, out, err = cli(sweep_args(tiny_bert, missing, data_dir, "--resume"))
    assert code == 2 and not missing.exists()
    assert (f"there is nothing to resume: {missing} does not exist; to start a new sweep there, run the same command "
            "without --resume") in _said(out, err)
    (tmp_path / "empty").mkdir()
    code, out, err = cli(sweep_args(tiny_bert, tmp_path / "empty", data_dir, "--resume"))
    assert code == 2 and "holds no experiment (no catalog.sqlite)" in _said(out, err)
    assert not any((tmp_path / "empty").iterdir())


@pytest.mark.parametrize("plan_only", [False, True])
def test_an_absurd_parallel_is_refused_before_anything_is_written(tmp_path, tiny_bert, data_dir, cli, plan_only):
    out = tmp_path / "exp"
    code, said, err = cli(sweep_args(tiny_bert, out, data_dir, "--parallel", str(10**20),
                                     *(["--plan-only"] if plan_only else [])))
    said = _said(said, err)
    assert code == 2 and "Traceback" not in said and not out.exists()
    assert "--parallel must be a whole number of runs from 1 to 256 (each is a worker process of its own), not " \
           "100000000000000000000" in said


@pytest.mark.parametrize("where", ["a file", "under a file"])
def test_a_cache_that_cannot_be_written_is_refused_before_any_model_work(tmp_path, data_dir, cli, monkeypatch, where):
    """The built-in SmolLM2 is a GGUF file, converted into the cache on first use (some 25 s): the cache is checked
    before it."""
    (tmp_path / "cache").write_text("not a folder")
    cache = tmp_path / "cache" if where == "a file" else tmp_path / "cache" / "seedscope"
    monkeypatch.setenv(CACHE_ENV, str(cache))
    out = tmp_path / "exp"
    code, said, err = cli(["sweep", "--runner", "icl", "--task", "sst2", "--model", "smollm2-135m-instruct",
                           "--seeds", "1,2", "--data-dir", str(data_dir), "--out", str(out)])
    said = _said(said, err)
    assert code == 2 and "Traceback" not in said and not out.exists()
    problem = "is a file, not a folder" if where == "a file" else "cannot be written (Not a directory)"
    assert f"the cache folder {cache} {problem}; set ${CACHE_ENV} to a folder you can write" in said, said


def test_a_read_only_cache_is_refused_and_a_missing_one_is_made(tmp_path, monkeypatch):
    """(Root writes everywhere, so as root the read-only folder is checked with the effective user nobody, in a
    folder that user may enter.)"""
    specs = seed_sweep(["sst2"], ["models/smollm2.gguf"], [1], method="icl")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "new" / "cache"))
    check_cache(specs)
    assert (tmp_path / "new" / "cache").is_dir()
    folder = Path(tempfile.mkdtemp())
    try:
        folder.chmod(0o755)
        read_only = folder / "read-only"
        read_only.mkdir()
        read_only.chmod(0o555)
        monkeypatch.setenv(CACHE_ENV, str(read_only))
        as_root = os.geteuid() == 0
        if as_root:
            os.seteuid(65534)
        try:
            with pytest.raises(SeedscopeError, match=f"the cache folder {read_only} cannot be written .Permission "
                                                     "denied."):
                check_cache(specs)
        finally:
            if as_root:
                os.seteuid(0)
    finally:
        shutil.rmtree(folder)
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache-file"))
    (tmp_path / "cache-file").write_text("")
    with pytest.raises(SeedscopeError, match="cache-file is a file, not a folder"):
        check_cache(specs)
    check_cache(seed_sweep(["sst2"], ["models/tiny"], [1]))  # a folder's model needs no cache
    check_cache(seed_sweep(["sst2"], ["models/tiny"], [1], method="protonet"))  # nor do token states
