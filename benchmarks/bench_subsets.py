"""Benchmark: subset seed variance for K = 1000 seeds × M = 20 systems, pool N = 10⁶, subsets of n = 10⁴.

Compares seedscope's vectorised path (one sparse selection matrix for all seeds) with two
straightforward loops measured in the same run on the same subsets:

* numpy loop: for each seed, for each system, ``scores[system][subset].mean()``;
* pure-Python loop: ``random.Random(seed).sample(range(N), n)`` and a Python ``sum`` per system.

The loops are timed on a fraction of the seeds and extrapolated linearly to K (their cost
per seed is constant); the table says which figures are extrapolated. One core: BLAS and
OpenMP threads are pinned to 1 before numpy loads.

Run: ``.venv/bin/python benchmarks/bench_subsets.py [--quick]``.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from seedscope.analysis.subsets import ScorePool, ScoreSpec, draw_subsets, seed_summary, subset_thetas  # noqa: E402


def vectorised(pool: ScorePool, n: int, seeds: np.ndarray) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    subsets = draw_subsets(pool.n_examples, n, seeds)
    theta = subset_thetas(pool, subsets)

    seed_summary(pd.DataFrame(theta, columns=pool.systems))
    return theta, time.perf_counter() - start


def numpy_loop(scores: np.ndarray, n: int, seeds: np.ndarray) -> tuple[np.ndarray, float]:
    start = time.perf_counter()
    theta = np.empty((len(seeds), len(scores)))
    for k, seed in enumerate(seeds):
        subset = np.random.default_rng(int(seed)).choice(scores.shape[1], n, replace=False)
        for m in range(len(scores)):
            theta[k, m] = scores[m][subset].mean()
    return theta, time.perf_counter() - start


def python_loop(scores: list[list[float]], n: int, seeds: np.ndarray) -> float:
    start = time.perf_counter()
    for seed in seeds:
        subset = random.Random(int(seed)).sample(range(len(scores[0])), n)
        for row in scores:
            sum(row[i] for i in subset) / n
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="K = 100, N = 10⁵ (a smoke run)")
    args = parser.parse_args()
    n_seeds, n_systems, pool_size, subset_size = (100, 20, 10**5, 10**4) if args.quick else (1000, 20, 10**6, 10**4)
    loop_seeds = max(1, n_seeds // 20)
    python_seeds = max(1, n_seeds // 200)

    rng = np.random.default_rng(0)
    scores = rng.random((n_systems, pool_size))
    pool = ScorePool([f"system{m}" for m in range(n_systems)], np.arange(pool_size).astype(str), scores[:, :, None], ScoreSpec("mean", ("score",)))
    seeds = np.arange(n_seeds)

    theta, fast = vectorised(pool, subset_size, seeds)
    loop_theta, loop_part = numpy_loop(scores, subset_size, seeds[:loop_seeds])
    assert np.allclose(theta[:loop_seeds], loop_theta), "the loop and the vectorised path disagree"
    loop_total = loop_part * n_seeds / loop_seeds
    python_total = python_loop(scores.tolist(), subset_size, seeds[:python_seeds]) * n_seeds / python_seeds

    print(f"K = {n_seeds} seeds, M = {n_systems} systems, N = {pool_size:,} examples, n = {subset_size:,} per subset (1 core)")
    print(f"{'method':<40}{'seconds':>10}{'vs vectorised':>16}")
    print(f"{'seedscope (sparse selection, all seeds)':<40}{fast:>10.2f}{1:>15.1f}x")
    print(f"{f'numpy loop ({loop_seeds} seeds, extrapolated)':<40}{loop_total:>10.2f}{loop_total / fast:>15.1f}x")
    print(f"{f'pure-Python loop ({python_seeds} seeds, extrapolated)':<40}{python_total:>10.2f}{python_total / fast:>15.1f}x")
    print(f"target under 5 s: {'met' if fast < 5 else 'NOT met'}")


if __name__ == "__main__":
    main()
