"""Benchmark: ``seedscope analyze`` / ``compare`` / ``subsets`` / ``report`` end to end against a plain pyarrow read.

Run: .venv/bin/python benchmarks/bench_analyze.py [--runs 20] [--examples 1000000] [--skip-analyze]

Writes S Parquet prediction files (string example ids, 3 classes, gold labels; one run per
file, as a seed sweep leaves them), then runs each in a fresh process, timed from outside as a
whole process (interpreter start and imports included) with its own peak memory:
(1) ``pyarrow.parquet.read_table`` of every file, (2) ``seedscope analyze FILES --json``
(reading, checks, alignment, macro, micro, per-example stability, error bars, JSON),
(3) ``seedscope compare A B`` with the files as two systems of S/2 runs, (4) ``seedscope
subsets A B`` (subsets of 10,000 examples, 20 seeds), (5) ``seedscope report FILES --html``,
and (6) ``seedscope --help`` (start-up). Prints each one's seconds, peak and ratio to the bare
read. Also times
the micro kernel (mean CON + CCON) on int8 codes, as alignment stores them, against int64, and
``analyze`` of free-text answers (tens of thousands of classes, where a dense S × C × C
confusion array would need tens of GB).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

RAW = """
import resource, sys, time, pyarrow.parquet as pq
start = time.perf_counter()
tables = [pq.read_table(path) for path in sys.argv[1:]]
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""
COMMAND = """
import resource, sys, time
start = time.perf_counter()
from seedscope.cli import main
try:
    main(sys.argv[1:])
except SystemExit as done:
    assert not done.code, done.code
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


FREE_TEXT = """
import resource, time
import numpy as np, pandas as pd
from seedscope.analysis.seed_effects import analyze
rng = np.random.default_rng(0)
runs, examples = 10, 20_000
gold = np.array([f"answer {i}" for i in rng.integers(0, examples, examples)])
frames = [pd.DataFrame({"run": str(s), "example_id": np.arange(examples).astype(str), "label": gold,
                        "prediction": np.where(rng.random(examples) < 0.3, gold,
                                               np.array([f"other {i}" for i in rng.integers(0, examples, examples)]))})
          for s in range(runs)]
table = pd.concat(frames)
start = time.perf_counter()
result = analyze(table, n_boot=1000)
assert result.aligned.n_classes > 30_000
print(time.perf_counter() - start, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def write_files(folder: Path, runs: int, examples: int) -> list[str]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    ids = pa.array([f"ex{i:07d}" for i in range(examples)])
    labels = rng.integers(0, 3, examples).astype(np.int64)
    paths = []
    for run in range(runs):
        right = rng.random(examples) < 0.7
        predictions = np.where(right, labels, rng.integers(0, 3, examples))
        path = folder / f"seed{run}.parquet"
        pq.write_table(pa.table({"example_id": ids, "prediction": predictions, "label": labels}), path)
        paths.append(str(path))
    return paths


def in_child(code: str, *args: str) -> tuple[float, float]:
    """(the child's wall time as a whole process, measured from here; its own peak resident memory in GB)."""
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL)
    took = time.perf_counter() - start
    if done.returncode:
        raise SystemExit(f"{args[:2]} failed: {done.stderr[-2000:]}")
    _, peak_kb = done.stdout.strip().splitlines()[-1].split()
    return took, int(peak_kb) / 1e6


def micro_kernel(runs: int, examples: int) -> tuple[float, float]:
    from seedscope.metrics.micro import mean_ccon, mean_con

    rng = np.random.default_rng(1)
    labels = rng.integers(0, 3, examples).astype(np.int8)
    codes = np.where(rng.random((runs, examples)) < 0.7, labels, rng.integers(0, 3, (runs, examples))).astype(np.int8)
    wide = codes.astype(np.int64)
    timings = []
    for predictions, gold in ((codes, labels), (wide, labels.astype(np.int64))):
        start = time.perf_counter()
        mean_con(predictions, 3), mean_ccon(predictions, gold)
        timings.append(time.perf_counter() - start)
    return timings[0], timings[1]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--examples", type=int, default=1_000_000)
    parser.add_argument("--skip-analyze", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        paths = write_files(Path(folder), args.runs, args.examples)
        size = sum(Path(p).stat().st_size for p in paths) / 1e6
        print(f"{args.runs} Parquet files × {args.examples:,} examples × 3 classes ({size:.0f} MB)")
        raw, raw_peak = in_child(RAW, *paths)
        print(f"{'pyarrow read_table':32} {raw:6.2f} s   peak {raw_peak:.2f} GB   (whole processes from here on)")
        if not args.skip_analyze:
            out = str(Path(folder) / "result.json")
            half = len(paths) // 2
            systems = [Path(folder) / "A", Path(folder) / "B"]
            for system, chunk in zip(systems, (paths[:half], paths[half:])):
                system.mkdir()
                for path in chunk:
                    Path(path).rename(system / Path(path).name)
            moved = sorted(str(p) for s in systems for p in s.iterdir())
            a, b = map(str, systems)
            commands = {
                "seedscope analyze --json": ["analyze", *moved, "--json", out, "--n-boot", "1000", "--top", "10"],
                "seedscope compare A B": ["compare", a, b, "--n-boot", "1000"],
                "seedscope subsets A B": ["subsets", a, b, "--subset-size", "10000", "--n-seeds", "20"],
                "seedscope report --html": ["report", *moved, "--html", str(Path(folder) / "r.html"), "--top", "10"],
                "seedscope --help (start-up)": ["--help"],
            }
            for name, command in commands.items():
                took, peak = in_child(COMMAND, *command)
                print(f"{name:32} {took:6.2f} s   peak {peak:.2f} GB   = {took / raw:.1f}× the raw read")
            result = json.loads(Path(out).read_text())
            print(f"  mean accuracy {result['metrics']['accuracy']['mean']:.4f}, CON {result['micro']['con']:.4f}")
    took, peak = in_child(FREE_TEXT)
    print(f"free-text answers, 10 runs × 20,000 examples, >30,000 distinct answers: analyze {took:.2f} s, "
          f"process peak {peak:.2f} GB")
    int8, int64 = micro_kernel(args.runs, args.examples)
    print(f"micro kernel (mean CON + CCON), S={args.runs}, N={args.examples:,}: int8 codes {int8:.3f} s, "
          f"int64 {int64:.3f} s")


if __name__ == "__main__":
    main()
