"""Benchmark: the demo's sweep packed two at a time (one thread each) against one at a time (two threads).

Run: .venv/bin/python benchmarks/bench_parallel.py [--quick]

Both go through the real CLI (``seedscope sweep --preset cpu-small --model all-minilm-l6-v2``,
the runs of ``seedscope demo``: MiniLM on SST-2 and STS-B, five seeds; ``--quick``: two seeds,
96 training and 200 dev examples) into fresh directories, each in its own process: first
``--parallel 1`` with 2 torch threads, then ``--parallel 2`` (each worker gets cores // 2
threads). Prints both wall times, the ratio, the summed run durations, and whether the two
sweeps predicted exactly the same. Meant for a quiet 2-core machine; on more cores set
``--threads`` to the cores used.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from _demo_sweep import seedscope, sweep_args

from seedscope.store import ExperimentStore


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="two seeds, 96 training and 200 dev examples per task")
    parser.add_argument("--threads", type=int, default=2, help="torch threads of the one-at-a-time sweep")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-parallel-") as scratch:
        one, two = Path(scratch) / "parallel-1", Path(scratch) / "parallel-2"
        serial, _ = seedscope(sweep_args(one, args.quick), threads=args.threads)
        packed, _ = seedscope(sweep_args(two, args.quick, "--parallel", "2"))
        stores = ExperimentStore.open(one), ExperimentStore.open(two)
        runs = [store.runs() for store in stores]
        figures = {
            "size": "quick" if args.quick else "full (the demo's runs)",
            "runs": len(runs[0]),
            "parallel_1_seconds": round(serial, 1),
            "parallel_2_seconds": round(packed, 1),
            "speedup": round(serial / packed, 2),
            "run_seconds_summed": [round(float(r["duration_s"].sum()), 1) for r in runs],
            "threads_per_run": [sorted(set(s.environment()["torch_threads"])) for s in stores],
            "identical_predictions": bool(stores[0].predictions().equals(stores[1].predictions())),
        }
    print(f"--parallel 1 ({args.threads} threads): {figures['parallel_1_seconds']} s; --parallel 2 (threads split): "
          f"{figures['parallel_2_seconds']} s; speed-up {figures['speedup']}×")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
