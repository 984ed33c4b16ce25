"""CPU-sized reproduction of the factor-importance study (issue 4), run for real.

SST-2, the small pretrained MiniLM encoder (all-MiniLM-L6-v2, offline), 200 class-balanced
labelled examples per run, N = 5 investigation × M = 10 mitigation runs for ``data_order`` and
``label_choice`` and L = N × M = 50 golden runs (150 fine-tuning runs), scored by macro-F1 as
the reference. Each run pools the first 2,000 SST-2 training rows with the 872 dev rows,
re-splits them 80/20 (stratified, data_split seed) and evaluates on the held-out 20%.

It runs ``seedscope factors run`` (resumable: rerun the same command to continue), then prints
IS with its bootstrap interval per factor and the wall time. With the default 2 epochs (26
optimiser steps of MiniLM, 574 evaluation examples per run) the 150 runs took 38 min on the
quiet 2-core CPU (about 15 s a run); ``--plan-only`` times one run and prints the estimate.

Run: .venv/bin/python benchmarks/factor_reproduction.py [--out DIR] [--golden-runs L] [--epochs E] [--plan-only]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from seedscope.cli import main as seedscope

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
SETTINGS = {
    "max_train_examples": 2000,  # the pool: first 2,000 training rows + the whole dev set
    "max_eval_examples": 872,
    "per_device_train_batch_size": 16,
    "learning_rate": 5e-5,
    "warmup_ratio": 0.1,
    "max_seq_length": 64,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/factor-reproduction"))
    parser.add_argument("--golden-runs", type=int, default=50, help="L (default N × M = 50, as the reference)")
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--plan-only", action="store_true", help="time one run and print the cost estimate")
    args = parser.parse_args()
    result = args.out.with_suffix(".json")
    argv = [
        "factors", "run", "--task", "sst2", "--model", "all-minilm-l6-v2",
        "--factor", "data_order", "--factor", "label_choice",
        "--investigation-runs", "5", "--mitigation-runs", "10", "--golden-runs", str(args.golden_runs),
        "--num-labelled", "200", "--metric", "f1_macro", "--data-dir", str(DATA),
        *[item for key, value in {**SETTINGS, "num_train_epochs": args.epochs}.items() for item in ("--set", f"{key}={value}")],
    ]
    if args.plan_only:
        seedscope(argv + ["--plan-only"])
        return
    resume = ["--resume"] if (args.out / "catalog.sqlite").exists() else []
    started = time.perf_counter()
    seedscope(argv + ["--out", str(args.out), "--json", str(result), "--bootstrap", "10000", *resume])
    wall = time.perf_counter() - started
    payload = json.loads(result.read_text())
    golden = payload["golden"]
    print(f"\nSST-2, MiniLM-L6, 200 labels, N = 5, M = 10, L = {golden['n_runs']}, {args.epochs} epochs, "
          "macro-F1 (fractions, population std)")
    print("| factor | IS | 95% CI | c | m | σ_GM | failed share |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, entry in payload["factors"].items():
        print(f"| {name} | {entry['importance']:.3f} | [{entry['importance_ci_low']:.3f}, {entry['importance_ci_high']:.3f}] "
              f"| {entry['c_std']:.4f} | {entry['m_std']:.4f} | {entry['golden_std']:.4f} | {entry['failed_share']:.2f} |")
    print(f"golden: {golden['n_runs']} runs, mean macro-F1 {golden['mean']:.4f}, σ_GM {golden['std']:.4f}, "
          f"min {golden['min']:.4f}, max {golden['max']:.4f}")
    print(f"wall time of this invocation: {wall / 60:.1f} min ({payload['wall_seconds'] / 60:.1f} min running runs); "
          "2-core CPU, 24 GiB, no GPU")
    print("reference (BERT, 1000 labels): label choice and data split important on SST-2; "
          "initialisation and data order not important on SST-2")


if __name__ == "__main__":
    main()
