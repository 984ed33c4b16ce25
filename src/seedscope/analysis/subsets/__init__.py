"""Evaluation-subset seed variance: how much a score depends on which prompts were drawn.

K seeds s_k each draw a subset P_k of n examples from a pool of N; θ_k is the score on P_k.
Var_seed = (1/(K−1)) Σ (θ_k − θ̄)², std = sqrt(Var_seed), CV = std / |θ̄|, banded as
negligible (CV < 0.02), moderate (0.02 ≤ CV ≤ 0.08) or high (CV > 0.08). Two systems are
compared seed by seed, Δ_k = θ^A_k − θ^B_k; the comparison is seed-robust when every Δ_k has
the same (non-zero) sign.

How subset k is drawn (reproducible by hand): the pool is the sorted list of example ids (as
strings), seed s_k = ``seed + k`` (k = 0 … K−1) unless explicit seeds are given, and the
subset is the pool positions ``np.random.default_rng(s_k).choice(N, n, replace=False)``.
Every system is scored on the same subset under one seed, so comparisons are paired.

Speed: scores that are functions of per-example column means (mean, accuracy, ratio) are
computed for all K seeds × M systems at once as one sparse K×N selection matrix times the
dense N×(M·C) value matrix — no Python loop over examples.

Modules: :mod:`.scores` (θ and the pool), :mod:`.draw` (subsets), :mod:`.variance` (seed
variance and comparisons), :mod:`.pool` (full-pool CIs and paired tests), :mod:`.size`
(subset size for a target CV). :func:`analyze_subsets` runs them all.
"""

from __future__ import annotations

from typing import Sequence

import pandas as pd

from seedscope.analysis.subsets.draw import check_subset_size, draw_subsets, subset_means, subset_seeds, subset_thetas
from seedscope.analysis.subsets.pool import full_pool_ci, paired_pool_tests
from seedscope.analysis.subsets.scores import (
    EXAMPLE_ID,
    SCORE,
    SYSTEM,
    ScorePool,
    ScoreSpec,
    correctness_scores,
    parse_score,
    score_pool,
)
from seedscope.analysis.subsets.size import default_size_grid, size_for_target_cv
from seedscope.analysis.subsets.variance import (
    ADVICE,
    HIGH_ABOVE,
    NEGLIGIBLE_BELOW,
    NOT_ROBUST_ADVICE,
    ROBUST_ADVICE,
    SubsetVariance,
    callable_subset_variance,
    cv_band,
    pair_summary,
    seed_deltas,
    seed_summary,
    subset_variance,
    summarize_thetas,
)

__all__ = [
    "ADVICE", "EXAMPLE_ID", "HIGH_ABOVE", "NEGLIGIBLE_BELOW", "NOT_ROBUST_ADVICE", "ROBUST_ADVICE", "SCORE", "SYSTEM", "ScorePool", "ScoreSpec",
    "SubsetVariance", "analyze_subsets", "correctness_scores", "callable_subset_variance", "check_subset_size", "cv_band",
    "default_size_grid", "draw_subsets", "full_pool_ci", "paired_pool_tests", "pair_summary", "parse_score",
    "score_pool", "seed_deltas", "seed_summary", "size_for_target_cv", "subset_means", "subset_seeds",
    "subset_thetas", "subset_variance", "summarize_thetas",
]


def analyze_subsets(
    table: pd.DataFrame | ScorePool,
    *,
    subset_size: int,
    n_seeds: int = 20,
    seed: int = 0,
    score: str | ScoreSpec = "mean",
    target_cv: float | None = None,
    sizes: Sequence[int] | None = None,
    n_boot: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    full_pool: bool = True,
    progress: bool = False,
) -> SubsetVariance:
    """Everything ``seedscope subsets`` reports: seed variance, full-pool CIs and tests, size for a target CV.

    Every resampling uses ``seed``, so the same call gives the same numbers.

    Parameters
    ----------
    table : pandas.DataFrame or ScorePool
    subset_size, n_seeds, seed, score
        As for :func:`subset_variance`.
    **other options
        The target CV, resamples and confidence of the full-pool intervals and tests.

    Returns
    -------
    SubsetVariance
        With ``pool_ci`` and ``pair_tests`` filled.

    Examples
    --------
    >>> from seedscope import analyze_subsets
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> pool = pd.DataFrame({"system": np.repeat(["A", "B"], 500), "example_id": np.tile(np.arange(500), 2),
    ...                      "score": (rng.random(1000) < 0.8).astype(float)})  # per-example 0/1 correctness
    >>> result = analyze_subsets(pool, subset_size=100, n_seeds=10)
    >>> result.pool_ci.index.tolist()
    ['A', 'B']
    """
    pool = table if isinstance(table, ScorePool) else score_pool(table, score)
    result = subset_variance(pool, subset_size=subset_size, n_seeds=n_seeds, seed=seed)
    if full_pool:
        result.pool_ci = full_pool_ci(pool, n_boot=n_boot, confidence=confidence, seed=seed)
        if len(pool.systems) > 1:
            result.pair_tests = paired_pool_tests(
                pool, n_boot=n_boot, n_permutations=n_permutations, confidence=confidence, seed=seed
            )
    if target_cv is not None:
        sizes = default_size_grid(pool.n_examples, subset_size) if sizes is None else sizes
        result.size_grid, result.needed_size = size_for_target_cv(
            pool, target_cv=target_cv, sizes=sizes, n_seeds=n_seeds, seed=seed, progress=progress
        )
    result.settings = {
        "seed": seed,
        "confidence": confidence,
        "n_boot": n_boot if full_pool else None,
        "n_permutations": n_permutations if full_pool and len(pool.systems) > 1 else None,
        "target_cv": target_cv,
    }
    return result
