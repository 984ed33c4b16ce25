"""The SLURM executor through the command line, against real daemons: detaching, status, bad input, a rebuilt catalog.

Every refusal is one line and exit status 2 with nothing written; a detached sweep returns at once and
``seedscope status`` takes in what its jobs leave.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from seedscope.store import CATALOG, ExperimentStore

REPO = Path(__file__).resolve().parents[2]
TINY = ["--set", "max_train_examples=16", "--set", "max_eval_examples=12", "--set", "max_steps=2",
        "--set", "max_seq_length=48", "--set", "per_device_train_batch_size=8"]
JOBS_S = 300
#: real daemons and real jobs (each a fresh Python that loads torch): run once in CI, not again at the floors
pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def empty_queue(slurm_cluster):
    slurm_cluster.cancel_all()
    yield
    slurm_cluster.cancel_all()


def _sweep(model, out, data_dir, *more) -> list[str]:
    return ["sweep", "--task", "rte", "--model", str(model), "--seeds", "1,2", "--out", str(out),
            "--data-dir", str(data_dir), "--executor", "slurm", *TINY, *more]


def _seedscope(args: list[str], **env) -> subprocess.CompletedProcess:
    """The command as a user runs it, in its own process."""
    return subprocess.run([sys.executable, "-m", "seedscope", *args], capture_output=True, text=True, timeout=JOBS_S,
                          env={**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "250", **env})


def _queue_empty(cluster) -> bool:
    return not cluster.command("squeue", "-h", "-o", "%i").stdout.strip()


def _wait_for(condition, what: str, limit: float = JOBS_S):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"waited {limit:.0f} s for {what}")


def test_a_detached_sweep_returns_and_status_takes_its_results_in(tmp_path, slurm_cluster, tiny_bert, data_dir):
    out = tmp_path / "exp"
    started = time.monotonic()
    done = _seedscope(_sweep(tiny_bert, out, data_dir, "--detach"))
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60  # it submits and returns; the jobs train on
    said = " ".join(done.stdout.split())
    job = json.loads(next((out / "slurm" / "submissions").glob("*.json")).read_text())["job_id"]
    assert f"submitted 2 run(s) as SLURM job array(s) {job} for {out}" in said
    assert f"follow them: seedscope status {out}" in said and f"cancel them: scancel {job}" in said
    _wait_for(lambda: _queue_empty(slurm_cluster), "the jobs to finish")
    assert ExperimentStore(out).catalog.statuses()[0][1] in ("pending", "running")  # nobody took the results in yet
    from seedscope.executors.slurm_jobs import run_states

    waiting = run_states(ExperimentStore.open(out, take_in=False))  # as a reader who may not write sees them
    assert {state.state for state in waiting.values()} == {"done"}  # the result files first, then the queue

    status = _seedscope(["status", str(out)])
    assert status.returncode == 0, status.stderr
    assert "2 runs: 2 done" in " ".join(status.stdout.split()) and f"{job}_0 on seedscope-node" in status.stdout
    assert ExperimentStore(out).runs()["status"].tolist() == ["done", "done"]  # status took them in
    verify = _seedscope(["verify", str(out)])
    assert verify.returncode == 0 and "sound" in verify.stdout

    assert _seedscope(["analyze", str(out), "--json", str(tmp_path / "before.json")]).returncode == 0
    (out / CATALOG).unlink()  # the index lost: rebuilt from the files, with the same analysis
    rebuilt = _seedscope(["verify", str(out), "--rebuild"])
    assert rebuilt.returncode == 0 and "catalog rebuilt from plan.json and the result records (2 done)" in rebuilt.stdout
    assert _seedscope(["analyze", str(out), "--json", str(tmp_path / "after.json")]).returncode == 0
    assert json.loads((tmp_path / "after.json").read_text()) == json.loads((tmp_path / "before.json").read_text())


def test_ctrl_c_while_waiting_leaves_the_jobs_running_and_says_how_to_collect_them(
        tmp_path, slurm_cluster, tiny_bert, data_dir):
    import signal

    out = tmp_path / "exp"
    process = subprocess.Popen([sys.executable, "-m", "seedscope", *_sweep(tiny_bert, out, data_dir)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "250"},
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    _wait_for(lambda: (out / "slurm" / "submissions").is_dir() and any((out / "slurm" / "submissions").iterdir()),
              "the jobs to be submitted")
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=60)
    said = " ".join(err.split())
    job = json.loads(next((out / "slurm" / "submissions").glob("*.json")).read_text())["job_id"]
    assert process.returncode == 130, err
    assert f"stopped waiting; the jobs go on running on SLURM (job arrays {job})" in said
    assert f"`seedscope status {out}` takes in their results" in said and f"`scancel {job}` cancels them" in said
    assert "Traceback" not in err
    _wait_for(lambda: _queue_empty(slurm_cluster), "the jobs, still running, to finish")
    assert _seedscope(["status", str(out)]).returncode == 0
    assert ExperimentStore(out).runs()["status"].tolist() == ["done", "done"]


def _refused(cli, args, out: Path, message: str) -> None:
    code, stdout, stderr = cli(args)
    said = " ".join(stderr.split())
    assert code == 2, (stdout, stderr)
    assert message in said, said
    assert len(stderr.strip().splitlines()) <= 3 and "Traceback" not in stderr  # one message (Rich may wrap it)
    assert not out.exists()  # nothing written


def test_bad_input_is_one_line_exit_2_and_nothing_written(tmp_path, slurm_cluster, tiny_bert, data_dir, cli):
    out = tmp_path / "exp"
    _refused(cli, _sweep(tiny_bert, out, data_dir, "--set", "slurm.partition=nope"), out,
             "SLURM has no partition 'nope' (slurm.partition); `sinfo -s` lists them")
    _refused(cli, _sweep(tiny_bert, out, data_dir, "--set", "slurm.partition=nope", "--set", "slurm.time=10"), out,
             "sbatch refuses these jobs: Invalid partition name specified (asked: partition nope, 1 CPU(s), time 10 per job)")
    _refused(cli, _sweep(tiny_bert, out, data_dir, "--set", "slurm.time=1:xx"), out,
             "slurm.time: '1:xx' is not a SLURM time limit (minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS")
    _refused(cli, _sweep(tiny_bert, out, data_dir, "--gpus-per-run", "1"), out,
             "sbatch refuses these jobs: Requested node configuration is not available (asked: partition (default), "
             "1 CPU(s), 1 GPU(s)")
    _refused(cli, _sweep(tiny_bert, out, data_dir, "--set", "slurm.constraint=bigmem"), out,
             "sbatch refuses these jobs: Invalid feature specification")
    local = [arg for arg in _sweep(tiny_bert, out, data_dir, "--detach") if arg not in ("--executor", "slurm")]
    _refused(cli, local, out, "--detach submits the runs as SLURM jobs and returns; it needs --executor slurm")
    _refused(cli, [*local[:-1], "--set", "slurm.partition=low"], out,
             "--set slurm.partition=… sets what each SLURM job asks for; add --executor slurm")


def test_where_sbatch_is_absent_the_executor_names_what_to_install(tmp_path, slurm_cluster, tiny_bert, data_dir, cli,
                                                                   monkeypatch):
    monkeypatch.setenv("PATH", str(Path(sys.executable).parent))  # python, no SLURM commands
    _refused(cli, _sweep(tiny_bert, tmp_path / "exp", data_dir), tmp_path / "exp",
             "--executor slurm submits the runs as SLURM jobs, which needs SLURM's sbatch, and it is not on PATH: run "
             "seedscope where SLURM's commands are (a login node of the cluster), or install SLURM's client "
             "(Debian / Ubuntu: apt-get install slurm-client)")


def test_resume_of_a_store_whose_plan_differs_is_refused_with_nothing_written(tmp_path, slurm_cluster, tiny_bert,
                                                                              data_dir, cli):
    out = tmp_path / "exp"
    assert cli(_sweep(tiny_bert, out, data_dir, "--detach"))[0] == 0
    _wait_for(lambda: _queue_empty(slurm_cluster), "the jobs to finish")
    assert cli(["status", str(out)])[0] == 0  # their results taken in
    before = {path: path.stat().st_mtime_ns for path in out.rglob("*") if path.is_file()}
    code, _, stderr = cli([*_sweep(tiny_bert, out, data_dir, "--resume"), "--set", "learning_rate=1e-3"])
    assert code == 2 and "holds a different plan (run rte__" in " ".join(stderr.split()) and "differs in hparams" in stderr
    assert {path: path.stat().st_mtime_ns for path in out.rglob("*") if path.is_file()} == before


def test_a_store_the_node_cannot_see_is_named_by_the_jobs_log_and_by_status(tmp_path, slurm_cluster, tiny_bert,
                                                                             data_dir, cli):
    unseen = slurm_cluster.hidden / "exp"  # on this machine, not on the compute node
    logs = tmp_path / "logs"  # a folder both see
    assert cli(_sweep(tiny_bert, unseen, data_dir, "--detach", "--set", f"slurm.logs={logs}"))[0] == 0
    _wait_for(lambda: _queue_empty(slurm_cluster), "the jobs to fail")
    said = "\n".join(path.read_text() for path in logs.glob("*_log.err"))
    assert f"the experiment directory {unseen} is not visible on node seedscope-node" in said
    code, stdout, _ = cli(["status", str(unseen), "--failed"])
    shown = " ".join(stdout.split())
    assert "2 runs: 2 lost" in shown and f"its log says: the experiment directory {unseen} is not visible" in shown

    hidden_logs = slurm_cluster.hidden / "default"  # the logs in the store too: SLURM cannot even start the jobs
    assert cli(_sweep(tiny_bert, hidden_logs, data_dir, "--detach"))[0] == 0
    _wait_for(lambda: _queue_empty(slurm_cluster), "the jobs to fail")
    code, stdout, _ = cli(["status", str(hidden_logs)])
    shown = " ".join(stdout.split())
    assert "ended failed (JobLaunchFailure): SLURM could not start it on seedscope-node" in shown
    assert "the experiment directory must be on a file system every node mounts" in shown


def test_an_sbatch_that_refuses_after_the_check_leaves_nothing_either(tmp_path, slurm_cluster, tiny_bert, data_dir,
                                                                       cli, monkeypatch):
    from seedscope.executors import slurm

    monkeypatch.setattr(slurm, "preflight", lambda execution: None)  # as if the cluster changed since the check
    out = tmp_path / "exp"
    _refused(cli, _sweep(tiny_bert, out, data_dir, "--set", "slurm.partition=nope", "--set", "slurm.time=10"), out,
             "sbatch refused the job array: Invalid partition name specified (asked: partition nope, 1 CPU(s), time 10 "
             "per job)")  # the experiment directory it had made is gone again
    out.mkdir()
    _refused(cli, _sweep(tiny_bert, out, data_dir, "--set", "slurm.partition=nope", "--set", "slurm.time=10"), out / "x",
             "sbatch refused the job array")
    assert list(out.iterdir()) == []  # an empty folder given stays, empty
