"""The subset size that brings the seed CV below a target."""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from seedscope.analysis.subsets.draw import check_subset_size, draw_subsets, subset_seeds, subset_thetas
from seedscope.analysis.subsets.scores import SYSTEM, ScorePool
from seedscope.analysis.subsets.variance import _theta_frame, seed_summary
from seedscope.errors import SeedscopeError
from seedscope.progress import steps


def default_size_grid(pool_size: int, subset_size: int | None = None, n_sizes: int = 12) -> np.ndarray:
    """Geometric grid of subset sizes from max(2, N/1000) to N (plus the current size)."""
    low = min(pool_size, max(2, pool_size // 1000))
    grid = np.unique(np.round(np.geomspace(low, pool_size, n_sizes)).astype(np.int64))
    if subset_size is not None:
        grid = np.union1d(grid, [subset_size])
    return grid


def size_for_target_cv(
    pool: ScorePool,
    *,
    target_cv: float = 0.02,
    sizes: Sequence[int] | None = None,
    n_seeds: int = 20,
    seed: int = 0,
    progress: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Re-run the subset analysis over a grid of sizes; the smallest size that keeps CV < target.

    Returns ``(grid, needed)``: ``grid`` is sizes × systems of CV (NaN where a ratio is
    undefined on some subset); ``needed`` gives per system the smallest grid size from which
    on every larger grid size also has CV < target (None if no grid size below N does). At
    n = N every subset is the whole pool, so CV = 0 there by construction: a target only the
    whole pool reaches is unreachable with subsets, and is None too (``reachable`` False).
    """
    if not target_cv > 0:  # also refuses NaN
        raise SeedscopeError(f"the target CV must be positive, not {target_cv}")
    sizes = default_size_grid(pool.n_examples) if sizes is None else np.unique(np.asarray(sizes, dtype=np.int64))
    for size in sizes:
        check_subset_size(int(size), pool.n_examples)
    seed_array = subset_seeds(n_seeds, seed)
    cvs = np.empty((len(sizes), len(pool.systems)))
    for i, size in enumerate(steps(sizes, "subset sizes", enabled=progress)):
        theta = subset_thetas(pool, draw_subsets(pool.n_examples, int(size), seed_array))
        summary = seed_summary(_theta_frame(theta, seed_array, pool.systems))
        cv = summary["cv"].to_numpy()
        cvs[i] = np.where(np.isnan(theta).any(axis=0), np.nan, cv)
    grid = pd.DataFrame(cvs, index=pd.Index(sizes, name="subset_size"), columns=pool.systems)
    needed = []
    for name in pool.systems:
        below = (grid[name] < target_cv).to_numpy()  # NaN compares False
        tail_ok = np.logical_and.accumulate(below[::-1])[::-1]
        first = int(sizes[np.argmax(tail_ok)]) if tail_ok.any() else None
        needed.append(None if first is None or first >= pool.n_examples else first)  # n = N: no subset at all
    return grid, pd.DataFrame({"needed_subset_size": needed, "reachable": [size is not None for size in needed]},
                              index=pd.Index(pool.systems, name=SYSTEM))
