"""Drawing the K subsets and scoring every system on every subset at once.

Subset k is the pool positions ``np.random.default_rng(s_k).choice(N, n, replace=False)`` over
the example ids sorted as text. Scores that are functions of per-example column means are
computed for all K seeds × M systems at once as one sparse K×N selection matrix times the dense
N×(M·C) value matrix — no Python loop over examples.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import scipy.sparse as sparse

from seedscope.analysis.subsets.scores import ScorePool
from seedscope.errors import SeedscopeError


def subset_seeds(n_seeds: int, seed: int = 0) -> np.ndarray:
    """The K subset seeds: ``seed, seed + 1, …, seed + K − 1``."""
    if n_seeds < 2:
        raise SeedscopeError(f"at least 2 subset seeds are needed to measure a seed variance, not {n_seeds}")
    return seed + np.arange(n_seeds, dtype=np.int64)


def check_subset_size(subset_size: int, pool_size: int) -> None:
    if subset_size < 1:
        raise SeedscopeError(f"the subset size must be at least 1, not {subset_size}")
    if subset_size > pool_size:
        raise SeedscopeError(f"the subset size {subset_size} is larger than the pool of {pool_size} examples")


def draw_subsets(pool_size: int, subset_size: int, seeds: Sequence[int]) -> np.ndarray:
    """K × n pool positions: row k is ``np.random.default_rng(seeds[k]).choice(N, n, replace=False)``."""
    check_subset_size(subset_size, pool_size)
    out = np.empty((len(seeds), subset_size), dtype=np.int64)
    for k, seed in enumerate(seeds):
        out[k] = np.random.default_rng(int(seed)).choice(pool_size, subset_size, replace=False)
    return out


def subset_means(values: np.ndarray, subsets: np.ndarray) -> np.ndarray:
    """Mean of every value column over every subset: (N × D values, K × n subsets) → K × D.

    One sparse K×N matrix with 1/n at the selected positions, times the values: the
    vectorised form of ``values[subset].mean(axis=0)`` for every subset at once.
    """
    n_subsets, size = subsets.shape
    selection = sparse.csr_matrix(
        (np.full(subsets.size, 1.0 / size), subsets.ravel(), np.arange(0, subsets.size + 1, size)),
        shape=(n_subsets, values.shape[0]),
    )
    return np.asarray(selection @ values)


def subset_thetas(pool: ScorePool, subsets: np.ndarray) -> np.ndarray:
    """θ for every subset and system: K × M (NaN where a ratio's denominator is 0)."""
    n_systems, n_examples, n_values = pool.values.shape
    flat = pool.values.transpose(1, 0, 2).reshape(n_examples, n_systems * n_values)
    means = subset_means(flat, subsets).reshape(len(subsets), n_systems, n_values)
    return pool.theta(means)
