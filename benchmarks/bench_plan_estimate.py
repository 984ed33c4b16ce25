"""Benchmark: how close ``sweep --plan-only``'s estimate comes to the demo sweep's measured time.

Run: .venv/bin/python benchmarks/bench_plan_estimate.py [--quick] [--parallel K]

Runs ``seedscope sweep --plan-only`` for the demo's runs (preset cpu-small with MiniLM on SST-2
and STS-B, five seeds; ``--quick``: two seeds, 96 training and 200 dev examples), then the real
sweep into a fresh directory, both through the CLI, and prints the estimate, the measured wall
time (the whole command) and the summed run durations, and estimate / measured. The target is
a ratio within 0.7–1.3 at full size on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

from _demo_sweep import parse_duration, seedscope, sweep_args

from seedscope.store import ExperimentStore


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="two seeds, 96 training and 200 dev examples per task")
    parser.add_argument("--parallel", type=int, default=1)
    args = parser.parse_args()
    extra = ["--parallel", str(args.parallel)] if args.parallel > 1 else []
    with tempfile.TemporaryDirectory(prefix="bench-estimate-") as scratch:
        out = Path(scratch) / "exp"
        planning, printed = seedscope(sweep_args(out, args.quick, *extra, "--plan-only"))
        line = re.search(r"estimated wall time: ([^(]+)", " ".join(printed.split()))
        if line is None:
            raise SystemExit(f"no estimate in the --plan-only output:\n{printed}")
        estimate = parse_duration(line.group(1))
        measured, _ = seedscope(sweep_args(out, args.quick, *extra))
        runs = ExperimentStore.open(out).runs()
    figures = {"size": "quick" if args.quick else "full (the demo's runs)", "parallel": args.parallel,
               "runs": len(runs), "plan_only_seconds": round(planning, 1), "estimate_seconds": estimate,
               "measured_seconds": round(measured, 1), "run_seconds_summed": round(float(runs["duration_s"].sum()), 1),
               "estimate_over_measured": round(estimate / measured, 2)}
    print(f"estimate {estimate:.0f} s, measured {measured:.0f} s: ratio {figures['estimate_over_measured']} "
          f"(target 0.7–1.3)")
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
