"""A study of many runs through the SLURM executor on a real local cluster: planning, submission, taking in.

Starts munged, slurmctld and slurmd on this machine (``tests/slurm.py``; ``apt-get install -y slurm-wlm
munge``, as root) with ``MaxArraySize`` set low, so the arrays are split, and runs a study of ``--runs``
runs of a trivial runner (a user runner: ten predictions, no model) through ``--executor slurm``:

1. **planning**: the run specs and the experiment directory (``plan.json``, the catalog);
2. **submission**: the arrays (their number, the time of each ``sbatch``), against one ``sbatch`` per run
   for a sample of runs (the obvious alternative), as a ratio per run;
3. **execution**: every task through SLURM (``--execute`` of them; the rest of a larger study is
   submitted held and cancelled), its per-run overhead from submission to a stored result (slot-seconds
   per run, and the latency of each run), against SLURM's own floor: a bare ``sbatch --array --wrap true``
   of as many tasks on the same cluster;
4. **taking in**: ``ExperimentStore.open`` of the store with all ``--runs`` result records waiting, each
   written by the jobs' own code (``JobRecords``), in one transaction.

    python benchmarks/bench_cluster.py --runs 10000 --execute 10000 --json benchmarks/results/cluster.json

The figures go to docs/how-to/cluster.md (Sizes and limits) with the machine and date.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(REPO / "tests"))
# the jobs run this checkout's seedscope too (sbatch passes the environment on)
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO / "src"), os.environ.get("PYTHONPATH")]))

import cloudpickle  # noqa: E402

from slurm import LocalSlurm, missing  # noqa: E402  (tests/slurm.py: the cluster of the tests)

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the jobs cannot import this script


def trivial_runner(spec, data_dir, on_step=None):
    """A user runner that trains nothing: ten predictions from the run's seed."""
    import pandas as pd

    from seedscope.runners.result import RunResult

    seed = spec.seeds.model_init
    predictions = pd.DataFrame({"run": spec.run_id, "example_id": [str(i) for i in range(10)],
                                "prediction": [(seed + i) % 2 for i in range(10)], "label": [i % 2 for i in range(10)]})
    return RunResult(spec.run_id, predictions, {"accuracy": float((predictions["prediction"] == predictions["label"]).mean())},
                     {"total_seconds": 0.0})


def _wait_empty(cluster: LocalSlurm, limit: float) -> float:
    started = time.monotonic()
    while time.monotonic() - started < limit:
        if not cluster.command("squeue", "-h", "-o", "%i", check=False).stdout.strip():
            return time.monotonic() - started
        time.sleep(1)
    raise RuntimeError(f"the queue did not empty within {limit:.0f} s")


def _floor(cluster: LocalSlurm, tasks: int, size: int) -> float:
    """SLURM's own floor: arrays of ``tasks`` bare ``true`` tasks, submitted and run; seconds from submit to empty."""
    started = time.monotonic()
    for start in range(0, tasks, size):
        count = min(size, tasks - start)
        cluster.command("sbatch", f"--array=0-{count - 1}", "-o", "/dev/null", "--wrap", "true")
    _wait_empty(cluster, 6 * 3600)
    return time.monotonic() - started


def _single_sbatch(cluster: LocalSlurm, count: int) -> float:
    """The alternative to arrays: one ``sbatch`` per run (held, then cancelled); seconds per run."""
    started = time.monotonic()
    for _ in range(count):
        cluster.command("sbatch", "--hold", "-o", "/dev/null", "--wrap", "true")
    seconds = (time.monotonic() - started) / count
    cluster.cancel_all()
    return seconds


def main() -> None:
    import signal

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout still stops the daemons (LocalSlurm's exit)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000, help="runs of the study (default 10,000)")
    parser.add_argument("--execute", type=int, default=None, help="runs executed through SLURM (default: all)")
    parser.add_argument("--max-array-size", type=int, default=1000, help="the cluster's MaxArraySize (default 1000)")
    parser.add_argument("--singles", type=int, default=200, help="single sbatch calls timed for the alternative")
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    reason = missing()
    if reason:
        raise SystemExit(reason)
    executed = min(args.runs, args.execute if args.execute is not None else args.runs)

    from seedscope.executors import slurm
    from seedscope.executors.options import ExecutionOptions
    from seedscope.executors.slurm_job import JobRecords
    from seedscope.executors.slurm_jobs import submissions
    from seedscope.plan import plan_to_dict, seed_sweep
    from seedscope.runners.result import RunResult  # noqa: F401  (imported before timing anything)
    from seedscope.slurm_config import SlurmSettings
    from seedscope.store import ExperimentStore
    from seedscope.store.records import listing, record_path

    figures: dict = {"machine": f"{platform.node()}: {os.cpu_count()} CPUs, {platform.platform()}",
                     "date": datetime.now(timezone.utc).date().isoformat(), "runs": args.runs, "executed": executed,
                     "max_array_size": args.max_array_size}
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as scratch:
        scratch = Path(scratch)
        cluster = LocalSlurm(scratch / "slurm", max_array_size=args.max_array_size)
        with cluster:
            os.environ.update(cluster.environment)
            figures["slots"] = int(cluster.command("sinfo", "-h", "-N", "-o", "%c").stdout.split()[0])

            started = time.monotonic()  # 1. planning
            specs = seed_sweep(["rte"], ["trivial"], range(1, args.runs + 1))
            store = ExperimentStore.create(scratch / "study", plan_to_dict(specs))
            figures["planning_s"] = time.monotonic() - started

            # 2. and 3. submission and execution: the first `executed` runs run, the rest are submitted held
            run = ExecutionOptions(executor="slurm", detach=True)
            held = ExecutionOptions(executor="slurm", detach=True, slurm=SlurmSettings(sbatch=["--hold"]))
            submit_started = datetime.now(timezone.utc)
            started = time.monotonic()
            slurm.execute(specs[:executed], store, execution=run, runner=trivial_runner)
            held_ids = []
            if executed < args.runs:
                held_ids = list(slurm.execute(specs[executed:], store, execution=held, runner=trivial_runner).submitted)
            figures["submission_s"] = time.monotonic() - started
            figures["arrays"] = len(submissions(store.path))
            if held_ids:
                cluster.command("scancel", *held_ids)
            figures["execution_s"] = _wait_empty(cluster, 12 * 3600) + figures["submission_s"]
            figures["single_sbatch_s_per_run"] = _single_sbatch(cluster, args.singles) if args.singles else None
            records = [json.loads(record_path(store.path, run_id).read_text()) for run_id in listing(store.path).results]
            finished = [datetime.fromisoformat(record["finished_at"]) for record in records]
            figures["executed_results"] = len(records)
            if len(records) != executed:
                raise SystemExit(f"only {len(records)} of {executed} runs left a result; see {store.path}/slurm/jobs")
            latency = sorted((end - submit_started).total_seconds() for end in finished)
            figures["latency_s"] = {"median": statistics.median(latency), "p95": latency[int(0.95 * (len(latency) - 1))],
                                    "last": latency[-1]} if latency else None
            figures["slot_s_per_run"] = figures["execution_s"] * figures["slots"] / max(executed, 1)
            figures["floor_s"] = _floor(cluster, executed, args.max_array_size)
            figures["floor_slot_s_per_run"] = figures["floor_s"] * figures["slots"] / max(executed, 1)

            # 4. taking in: every run's result record waiting (the rest written by the jobs' own code, here)
            rest = [spec for spec in specs if not (store.path / "results" / f"{spec.run_id}.json").exists()]
            sink = JobRecords(store.path, rest, {}, {"job_id": "bench", "node": platform.node(), "restart_count": 0})
            started = time.monotonic()
            for spec in rest:
                sink.mark_running(spec.run_id)
                outcome = trivial_runner(spec, None)
                sink.record_success(spec.run_id, outcome.predictions, outcome.metrics, {}, outcome.timings)
            figures["records_written_here"] = len(rest)
            figures["record_write_s_per_run"] = (time.monotonic() - started) / max(len(rest), 1)
            started = time.monotonic()
            opened = ExperimentStore.open(store.path)
            figures["take_in_s"] = time.monotonic() - started
            figures["done"] = int((opened.runs()["status"] == "done").sum())
            started = time.monotonic()
            ExperimentStore.open(store.path)
            figures["open_again_s"] = time.monotonic() - started  # nothing new: no write
    figures["single_vs_array_submission"] = (figures["single_sbatch_s_per_run"] * args.runs / figures["submission_s"]
                                             if figures["single_sbatch_s_per_run"] else None)
    figures["overhead_vs_floor"] = figures["slot_s_per_run"] / figures["floor_slot_s_per_run"]
    print(json.dumps(figures, indent=2))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
