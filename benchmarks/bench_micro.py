"""Mean CON and CCON: the closed form over class counts vs the naive loop over run pairs.

Run: .venv/bin/python benchmarks/bench_micro.py [--quick]

For S runs × N examples × 3 classes (random predictions, 70 % correct), times
``mean_con`` + ``mean_ccon`` (O(S·N·C)) against a loop over the S(S−1)/2 pairs that is
vectorised over examples (O(S²·N)). Where the full pair loop would take longer than
PAIR_BUDGET_S seconds, only the first pairs are timed and the total is extrapolated
linearly (marked "extrap."). Both give the same numbers (checked on the pairs timed).
Single-threaded: BLAS and OpenMP are limited to one thread before numpy loads.
"""

from __future__ import annotations

import os

for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[variable] = "1"

import argparse  # noqa: E402
import itertools  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from seedscope.metrics.micro import mean_ccon, mean_con  # noqa: E402

N_CLASSES = 3
PAIR_BUDGET_S = 4.0


def make_runs(n_runs: int, n_examples: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    gold = rng.integers(0, N_CLASSES, n_examples).astype(np.int8)
    noise = rng.integers(0, N_CLASSES, (n_runs, n_examples), dtype=np.int8)
    pred = np.where(rng.random((n_runs, n_examples), dtype=np.float32) < 0.7, gold, noise)
    return pred, gold


def closed_form(pred, gold) -> tuple[float, float, float]:
    start = time.perf_counter()
    con, ccon = mean_con(pred, N_CLASSES), mean_ccon(pred, gold)
    return time.perf_counter() - start, con, ccon


def pair_loop(pred, gold) -> tuple[float, bool, float, float]:
    """Seconds for all pairs (extrapolated past the budget), whether extrapolated, and the
    mean CON / CCON over the pairs actually timed."""
    pairs = list(itertools.combinations(range(len(pred)), 2))
    con, ccon = [], []
    start = time.perf_counter()
    for done, (a, b) in enumerate(pairs, 1):
        same = pred[a] == pred[b]
        con.append(same.mean())
        ccon.append((same & (pred[a] == gold)).mean())
        elapsed = time.perf_counter() - start
        if elapsed > PAIR_BUDGET_S and done < len(pairs):
            return elapsed * len(pairs) / done, True, float(np.mean(con)), float(np.mean(ccon))
    return time.perf_counter() - start, False, float(np.mean(con)), float(np.mean(ccon))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="only N = 10^4 (seconds)")
    args = parser.parse_args()
    sizes = [10_000] if args.quick else [10_000, 1_000_000]
    print(f"{'S':>4} {'N':>9} {'pairs':>6} {'closed form s':>14} {'pair loop s':>12} {'':8} {'ratio':>8}  CON")
    for n_examples, n_runs in itertools.product(sizes, (10, 50, 100)):
        pred, gold = make_runs(n_runs, n_examples)
        fast, con, ccon = min((closed_form(pred, gold) for _ in range(3)), key=lambda r: r[0])
        slow, extrapolated, loop_con, loop_ccon = pair_loop(pred, gold)
        if not extrapolated:
            assert abs(con - loop_con) < 1e-9 and abs(ccon - loop_ccon) < 1e-9, "closed form disagrees with the loop"
        note = "extrap." if extrapolated else ""
        pairs = n_runs * (n_runs - 1) // 2
        print(f"{n_runs:>4} {n_examples:>9} {pairs:>6} {fast:>14.4f} {slow:>12.3f} {note:8} {slow / fast:>7.0f}×  {con:.4f}")
    wide = pred.astype(np.int64), gold.astype(np.int64)
    seconds = min(closed_form(*wide)[0] for _ in range(3))
    print(f"same last case with int64 class codes (as align_runs stores them): {seconds:.4f} s")
    print("closed form = mean_con + mean_ccon (int8 class codes, one core); target: S=100, N=10^6 under 1 s")


if __name__ == "__main__":
    main()
