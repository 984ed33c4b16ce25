"""Benchmark: ``status``, ``analyze``, ``compare`` and ``report`` of stores of many small runs (issue 52).

Builds experiment stores of 1,000, 3,000 and 10,000 finished runs × 50 predictions (two of each
size, for ``compare``; see ``many_runs_stores.py``: the store's own layout, written without the
per-run fsyncs), then times each command as a whole process (interpreter start and imports
included) with its own peak memory (the resident set of the one child a small wrapper process
waits for), against the number of runs, and fits the growth: time ∝ S^k. A second axis holds
the runs at 1,000 and grows the predictions per run (``--predictions-axis``), for the growth
against predictions. ``--before SRC`` times the same commands against another checkout's
sources (a worktree of the commit before: ``git worktree add ../before <commit>``, then
``../before/src``) at ``--before-runs`` (1,000 and 2,000; it was quadratic), for the ratio
before / after in the same run.

Run: .venv/bin/python benchmarks/bench_many_runs.py [--runs 1000,3000,10000] [--before ../before/src]
     .venv/bin/python benchmarks/bench_many_runs.py --quick        (200 and 400 runs: checks that it works)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from many_runs_stores import api_seconds_per_run, build_store, check_layout, with_runs_to_do  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: runs the command it is given and prints its seconds and its peak resident memory (its only child's)
WRAPPER = """
import resource, subprocess, sys, time
start = time.perf_counter()
done = subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=float(sys.argv[1]))
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(seconds, peak, done.returncode)
sys.stderr.write(done.stderr.decode()[-2000:])
"""
COMMANDS = ("status", "analyze", "compare", "report")
#: the commands timed against the predictions per run (compare would need a second store of each size)
AXIS_COMMANDS = ("status", "analyze", "report")


def timed(command: list[str], source: Path, timeout: float) -> dict:
    """Seconds and peak bytes of one whole process of ``command`` (its exit status too), with ``source`` first on
    the path."""
    env = {**os.environ, "PYTHONPATH": str(source), "HF_HUB_OFFLINE": "1", "COLUMNS": "120"}
    try:
        done = subprocess.run([sys.executable, "-c", WRAPPER, str(timeout), *command], env=env, capture_output=True,
                              text=True, timeout=timeout + 60)
    except subprocess.TimeoutExpired:
        return {"seconds": None, "peak_bytes": None, "exit": "timed out"}
    try:
        seconds, peak, code = done.stdout.split()
    except ValueError:  # the wrapper itself gave up: the command ran past the timeout
        return {"seconds": None, "peak_bytes": None, "exit": "timed out", "stderr": done.stderr[-500:]}
    result = {"seconds": round(float(seconds), 3), "peak_bytes": int(peak), "exit": int(code)}
    if int(code) not in (0, 1):  # status exits 1 when it finds integrity problems
        result["stderr"] = done.stderr[-500:]
    return result


def command(name: str, store: Path, other: Path, out: Path) -> list[str]:
    seedscope = [sys.executable, "-m", "seedscope"]
    return {
        "status": seedscope + ["status", str(store)],
        "analyze": seedscope + ["analyze", str(store), "--json", str(out / "analyze.json")],
        "compare": seedscope + ["compare", str(store), str(other), "--json", str(out / "compare.json")],
        "report": seedscope + ["report", str(store), "--html", str(out / "report.html")],
    }[name]


def growth(sizes: list[int], values: list[float | None]) -> float | None:
    """The exponent k of value ∝ size^k, fitted by least squares on the logarithms (None with fewer than 2 points)."""
    points = [(math.log(s), math.log(v)) for s, v in zip(sizes, values) if v]
    if len(points) < 2:
        return None
    x, y = np.array(points).T
    return float(np.polyfit(x, y, 1)[0])


def stores(folder: Path, n_runs: int, n_predictions: int, with_other: bool) -> tuple[Path, Path, dict]:
    """Store A (and B, another model with other seeds, for compare) of ``n_runs`` × ``n_predictions``."""
    a, b = folder / f"a-{n_runs}x{n_predictions}", folder / f"b-{n_runs}x{n_predictions}"
    built = {}
    if not a.exists():
        built["build_a_s"] = round(build_store(a, n_runs, n_predictions, seed=0), 2)
    if with_other and not b.exists():
        built["build_b_s"] = round(build_store(b, n_runs, n_predictions, seed=1, model="org/other"), 2)
    return a, b, built


def bench(folder: Path, sizes: list[int], n_predictions: int, source: Path, names, timeout: float, label: str) -> list:
    rows = []
    for n_runs in sizes:
        a, b, built = stores(folder, n_runs, n_predictions, "compare" in names)
        out = folder / f"out-{label}-{n_runs}x{n_predictions}"
        out.mkdir(exist_ok=True)
        row = {"code": label, "runs": n_runs, "predictions_per_run": n_predictions, **built}
        for name in names:
            row[name] = timed(command(name, a, b, out), source, timeout)
            print(f"{label:>6} {n_runs:>6} runs × {n_predictions:>5}: {name:<8} {_shown(row[name])}", flush=True)
        if "status" in names:  # and while a sweep runs: 5 % of the runs to do, so status reckons the time left
            running = folder / f"running-{n_runs}x{n_predictions}"
            if not running.exists():
                with_runs_to_do(a, running)
            row["status_to_do"] = timed(command("status", running, b, out), source, timeout)
            print(f"{label:>6} {n_runs:>6} runs × {n_predictions:>5}: status, 5 % to do {_shown(row['status_to_do'])}",
                  flush=True)
        rows.append(row)
    return rows


def _shown(result: dict) -> str:
    if result["seconds"] is None:
        return "timed out"
    return f"{result['seconds']:8.2f} s  {result['peak_bytes'] / 2**20:8.0f} MB  exit {result['exit']}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="1000,3000,10000")
    parser.add_argument("--predictions", type=int, default=50)
    parser.add_argument("--predictions-axis", default="50,500,2000", help="predictions per run at --axis-runs runs")
    parser.add_argument("--axis-runs", type=int, default=1000)
    parser.add_argument("--before", type=Path, help="another checkout's src/ (the code before) to time as well")
    parser.add_argument("--before-runs", default="1000,2000")
    parser.add_argument("--timeout", type=float, default=900)
    parser.add_argument("--keep", type=Path, help="build the stores here and keep them (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / f"many-runs-{date.today()}.json")
    parser.add_argument("--quick", action="store_true", help="200 and 400 runs, 2 sizes of predictions, no before")
    args = parser.parse_args()
    sizes = [200, 400] if args.quick else [int(s) for s in args.runs.split(",")]
    axis = [50, 200] if args.quick else [int(n) for n in args.predictions_axis.split(",")]
    axis_runs = 200 if args.quick else args.axis_runs
    source = REPO / "src"
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.keep or Path(scratch)
        folder.mkdir(parents=True, exist_ok=True)
        check_layout(Path(scratch) / "layout")  # the fast build writes what record_success writes
        per_run = api_seconds_per_run(Path(scratch) / "api", 100)
        print(f"record_success (with mark_running) through the store API: {per_run * 1000:.1f} ms a run; the fast "
              f"build writes the same files without the per-run fsyncs", flush=True)
        rows = bench(folder, sizes, args.predictions, source, COMMANDS, args.timeout, "after")
        axis_rows = []
        for n_predictions in axis:
            axis_rows += bench(folder, [axis_runs], n_predictions, source, AXIS_COMMANDS, args.timeout, "after")
        before, ratios = [], {}
        if args.before and not args.quick:
            before = bench(folder, [int(s) for s in args.before_runs.split(",")], args.predictions, args.before,
                           COMMANDS, args.timeout, "before")
        for old in before:  # against this code's figures at the same size, timed in the same run
            new = next((r for r in rows if r["runs"] == old["runs"]), None)
            if new is None:
                new = bench(folder, [old["runs"]], args.predictions, source, COMMANDS, args.timeout, "after")[0]
                rows.append(new)
            ratios[old["runs"]] = {name: (round(old[name]["seconds"] / new[name]["seconds"], 1)
                                          if old[name]["seconds"] and new[name]["seconds"] else None)
                                   for name in (*COMMANDS, "status_to_do")}
    fitted = [r for r in rows if r["runs"] in sizes]
    summary = {name: {"time_exponent": growth(sizes, [r[name]["seconds"] for r in fitted]),
                      "memory_exponent": growth(sizes, [r[name]["peak_bytes"] for r in fitted])}
               for name in (*COMMANDS, "status_to_do")}
    against_predictions = {name: {"time_exponent": growth(axis, [r[name]["seconds"] for r in axis_rows]),
                                  "memory_exponent": growth(axis, [r[name]["peak_bytes"] for r in axis_rows])}
                           for name in AXIS_COMMANDS}
    print("\ngrowth against runs (time ∝ S^k, memory ∝ S^k):")
    for name, fit in summary.items():
        print(f"  {name:<8} time k = {_k(fit['time_exponent'])}, memory k = {_k(fit['memory_exponent'])}")
    print(f"growth against predictions per run at {axis_runs} runs:")
    for name, fit in against_predictions.items():
        print(f"  {name:<8} time k = {_k(fit['time_exponent'])}, memory k = {_k(fit['memory_exponent'])}")
    for n_runs, ratio in ratios.items():
        print(f"before / after at {n_runs} runs: " + ", ".join(f"{name} {value}×" for name, value in ratio.items()))
    document = {"machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} CPUs", "date": str(date.today()),
                "python": platform.python_version(), "api_seconds_per_run": round(per_run, 4), "runs": rows,
                "predictions_axis": axis_rows, "before": before, "growth_against_runs": summary,
                "growth_against_predictions": against_predictions, "before_over_after": ratios}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(document, indent=2) + "\n")
    print(f"wrote {args.json}")


def _k(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.2f}"


if __name__ == "__main__":
    main()
