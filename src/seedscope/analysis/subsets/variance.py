"""Seed variance of subset scores: Var_seed, CV and its band, per-seed differences and seed-robustness."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from seedscope.analysis.subsets.draw import draw_subsets, subset_seeds, subset_thetas
from seedscope.analysis.subsets.scores import SYSTEM, ScorePool, ScoreSpec, score_pool
from seedscope.errors import SeedscopeError
from seedscope.progress import steps
from seedscope.serialize import json_ready

#: CV band edges: negligible < 0.02 ≤ moderate ≤ 0.08 < high
NEGLIGIBLE_BELOW, HIGH_ABOVE = 0.02, 0.08
ADVICE = {
    "negligible": "negligible seed effect: single-seed results are trustworthy",
    "moderate": "moderate seed effect: report mean ± std across seeds",
    "high": "high seed sensitivity: increase the subset size or average over seeds",
    "undefined": "the mean score is 0, so the CV is undefined: look at the std instead",
}
NOT_ROBUST_ADVICE = "the ranking flips with the seed: the difference is not meaningful"
ROBUST_ADVICE = "the same system wins under every seed"
TIED_ADVICE = "the two systems score the same under every seed: there is no difference to rank"


def cv_band(cv: float) -> str:
    """negligible < 0.02 ≤ moderate ≤ 0.08 < high; ``undefined`` when the mean is 0."""
    if cv is None or math.isnan(cv):
        return "undefined"
    if cv < NEGLIGIBLE_BELOW:
        return "negligible"
    return "moderate" if cv <= HIGH_ABOVE else "high"


def seed_summary(theta: pd.DataFrame) -> pd.DataFrame:
    """Per system (column of ``theta``, rows = seeds): mean, var_seed (÷K−1), std, cv, band, advice."""
    values = theta.to_numpy(dtype=float)
    mean = values.mean(axis=0)
    var = values.var(axis=0, ddof=1)
    std = np.sqrt(var)
    with np.errstate(divide="ignore", invalid="ignore"):
        cv = np.where(mean == 0, np.nan, np.where(std == 0, 0.0, std / np.abs(mean)))  # a zero mean: undefined
    bands = [cv_band(c) for c in cv]
    frame = pd.DataFrame(
        {"mean": mean, "var_seed": var, "std": std, "cv": cv, "band": bands, "advice": [ADVICE[b] for b in bands]},
        index=pd.Index(theta.columns, name=SYSTEM),
    )
    return frame


def pair_names(systems: Sequence[str]) -> list[tuple[str, str]]:
    """Every unordered pair (A, B) with A before B in system order."""
    return list(itertools.combinations(systems, 2))


def seed_deltas(theta: pd.DataFrame) -> pd.DataFrame:
    """Δ_k = θ^A_k − θ^B_k for every pair; columns are ``"A − B"``."""
    pairs = pair_names(list(theta.columns))
    return pd.DataFrame(
        {f"{a} − {b}": theta[a].to_numpy() - theta[b].to_numpy() for a, b in pairs},
        index=theta.index,
    )


def pair_summary(theta: pd.DataFrame) -> pd.DataFrame:
    """Per pair: mean Δ, sign counts, sign-consistency and whether the comparison is seed-robust.

    sign_consistency = share of seeds whose Δ has the majority sign (a Δ of exactly 0 counts
    against it; undefined when every Δ is 0: the systems tie); seed_robust = every Δ_k > 0 or
    every Δ_k < 0.
    """
    rows = []
    for a, b in pair_names(list(theta.columns)):
        delta = theta[a].to_numpy() - theta[b].to_numpy()
        positive, negative = int((delta > 0).sum()), int((delta < 0).sum())
        robust = positive == len(delta) or negative == len(delta)
        tied = positive == negative == 0  # the same score under every seed: nothing to rank, nothing flips
        rows.append(
            {
                "system_a": a,
                "system_b": b,
                "mean_delta": float(delta.mean()),
                "std_delta": float(delta.std(ddof=1)),
                "n_positive": positive,
                "n_negative": negative,
                "n_zero": len(delta) - positive - negative,
                "sign_consistency": np.nan if tied else max(positive, negative) / len(delta),
                "seed_robust": robust,
                "advice": TIED_ADVICE if tied else ROBUST_ADVICE if robust else NOT_ROBUST_ADVICE,
            }
        )
    columns = ["system_a", "system_b", "mean_delta", "std_delta", "n_positive", "n_negative", "n_zero",
               "sign_consistency", "seed_robust", "advice"]
    return pd.DataFrame(rows, columns=columns).set_index(["system_a", "system_b"])


@dataclass
class SubsetVariance:
    """Seed variance of M systems over K subsets of size n, plus the paired comparisons.

    ``theta``: K × M (index = subset seed). ``summary``: per system mean, var_seed (divisor
    K−1), std, cv, band, advice. ``deltas``: K × pairs. ``pairs``: per pair mean Δ,
    sign-consistency, seed_robust. Optional extras: ``pool_ci`` (full-pool score and its
    bootstrap CI per system), ``pair_tests`` (paired difference on the full pool, its CI and
    a paired permutation p-value), ``size_grid`` / ``needed_size`` (CV by subset size).

    Parameters
    ----------
    score : str
    subset_size, pool_size : int
    seeds : numpy.ndarray
    theta, summary, deltas, pairs : pandas.DataFrame

    Returns
    -------
    SubsetVariance
        Built by :func:`subset_variance`, :func:`analyze_subsets` or :func:`callable_subset_variance`.

    Examples
    --------
    >>> from seedscope import subset_variance
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> pool = pd.DataFrame({"system": np.repeat(["A", "B"], 500), "example_id": np.tile(np.arange(500), 2),
    ...                      "score": (rng.random(1000) < 0.8).astype(float)})  # per-example 0/1 correctness
    >>> result = subset_variance(pool, subset_size=100, n_seeds=10)
    >>> result.subset_size, result.pool_size, len(result.seeds)
    (100, 500, 10)
    """

    score: str
    subset_size: int
    pool_size: int
    seeds: np.ndarray
    theta: pd.DataFrame
    summary: pd.DataFrame
    deltas: pd.DataFrame
    pairs: pd.DataFrame
    pool_ci: pd.DataFrame | None = None
    pair_tests: pd.DataFrame | None = None
    size_grid: pd.DataFrame | None = None
    needed_size: pd.DataFrame | None = None
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def systems(self) -> list[str]:
        return list(self.theta.columns)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document (schema in docs/how-to/subsets.md). CV is null when the mean is 0."""
        systems = {}
        for name, row in self.summary.iterrows():
            entry = {
                "scores": [json_ready(v) for v in self.theta[name]],
                "mean": json_ready(row["mean"]),
                "var_seed": json_ready(row["var_seed"]),
                "std": json_ready(row["std"]),
                "cv": json_ready(row["cv"]),
                "band": row["band"],
                "advice": row["advice"],
            }
            if self.pool_ci is not None:
                entry["full_pool"] = {k: json_ready(v) for k, v in self.pool_ci.loc[name].items()}
            if self.needed_size is not None:  # null and reachable false: only the whole pool reaches the target
                entry["needed_subset_size"] = json_ready(self.needed_size.loc[name, "needed_subset_size"])
                entry["target_cv_reachable"] = bool(self.needed_size.loc[name, "reachable"])
            systems[name] = entry
        pairs = []
        for (a, b), row in self.pairs.iterrows():
            entry = {
                "system_a": a,
                "system_b": b,
                "deltas": [json_ready(v) for v in self.deltas[f"{a} − {b}"]],
                "mean_delta": json_ready(row["mean_delta"]),
                "sign_consistency": json_ready(row["sign_consistency"]),
                "seed_robust": bool(row["seed_robust"]),
                "advice": row["advice"],
            }
            if self.pair_tests is not None:
                entry["full_pool"] = {k: json_ready(v) for k, v in self.pair_tests.loc[(a, b)].items()}
            pairs.append(entry)
        document = {
            "score": self.score,
            "subset_size": self.subset_size,
            "pool_size": self.pool_size,
            "n_seeds": len(self.seeds),
            "seeds": [int(s) for s in self.seeds],
            "bands": {"negligible": f"cv < {NEGLIGIBLE_BELOW}", "moderate": f"{NEGLIGIBLE_BELOW} <= cv <= {HIGH_ABOVE}",
                      "high": f"cv > {HIGH_ABOVE}"},
            "systems": systems,
            "pairs": pairs,
        }
        if self.size_grid is not None:
            document["size_grid"] = {
                "target_cv": self.settings.get("target_cv"),
                "sizes": [int(s) for s in self.size_grid.index],
                "cv": {name: [json_ready(v) for v in self.size_grid[name]] for name in self.size_grid.columns},
            }
        document["settings"] = {k: json_ready(v) for k, v in self.settings.items()}
        return document


def _theta_frame(theta: np.ndarray, seeds: np.ndarray, systems: list[str]) -> pd.DataFrame:
    return pd.DataFrame(theta, index=pd.Index(seeds, name="seed"), columns=systems)


def _check_ratio(theta: np.ndarray, seeds: np.ndarray, systems: list[str], spec: ScoreSpec) -> None:
    if np.isnan(theta).any():
        k, m = np.argwhere(np.isnan(theta))[0]
        base, ref = spec.columns[1], spec.columns[2]
        raise SeedscopeError(
            f"ratio score undefined: m({ref}) − m({base}) is 0 for system {systems[m]} on the subset of seed "
            f"{seeds[k]}, so the denominator is zero"
        )


def summarize_thetas(theta: pd.DataFrame, *, score: str, subset_size: int, pool_size: int) -> SubsetVariance:
    """Turn a K × M table of subset scores into a :class:`SubsetVariance`."""
    if len(theta) < 2:
        raise SeedscopeError(f"at least 2 subset seeds are needed to measure a seed variance, not {len(theta)}")
    return SubsetVariance(
        score=score,
        subset_size=subset_size,
        pool_size=pool_size,
        seeds=theta.index.to_numpy(),
        theta=theta,
        summary=seed_summary(theta),
        deltas=seed_deltas(theta),
        pairs=pair_summary(theta),
    )


def subset_variance(
    table: pd.DataFrame | ScorePool,
    *,
    subset_size: int,
    n_seeds: int = 20,
    seed: int = 0,
    seeds: Sequence[int] | None = None,
    score: str | ScoreSpec = "mean",
) -> SubsetVariance:
    """Seed variance of every system's score over K random subsets of ``subset_size`` examples.

    ``table`` is a long score table (``system``, ``example_id`` and the score's columns) or a
    :class:`ScorePool`. Subset k uses seed ``seeds[k]`` (default ``seed + k``); see the module
    docstring for the exact draw.

    Parameters
    ----------
    table : pandas.DataFrame or ScorePool
        Columns system, example_id and the score's columns.
    subset_size : int
        Examples per subset (n).
    n_seeds : int, default 20
        Subsets drawn (K).
    seed : int, default 0
    seeds : list of int, optional
    score : str or ScoreSpec, default "mean"
        The score of a subset.

    Returns
    -------
    SubsetVariance

    Examples
    --------
    >>> from seedscope import subset_variance
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> pool = pd.DataFrame({"system": np.repeat(["A", "B"], 500), "example_id": np.tile(np.arange(500), 2),
    ...                      "score": (rng.random(1000) < 0.8).astype(float)})  # per-example 0/1 correctness
    >>> result = subset_variance(pool, subset_size=100, n_seeds=10)
    >>> result.theta.shape, result.summary.columns.tolist()[:4]
    ((10, 2), ['mean', 'var_seed', 'std', 'cv'])
    """
    pool = table if isinstance(table, ScorePool) else score_pool(table, score)
    seed_array = subset_seeds(n_seeds, seed) if seeds is None else np.asarray(seeds, dtype=np.int64)
    if len(seed_array) < 2:
        raise SeedscopeError(f"at least 2 subset seeds are needed to measure a seed variance, not {len(seed_array)}")
    subsets = draw_subsets(pool.n_examples, subset_size, seed_array)
    theta = subset_thetas(pool, subsets)
    if pool.spec.kind == "ratio":
        _check_ratio(theta, seed_array, pool.systems, pool.spec)
    result = summarize_thetas(
        _theta_frame(theta, seed_array, pool.systems),
        score=pool.spec.text,
        subset_size=subset_size,
        pool_size=pool.n_examples,
    )
    result.settings = {"seed": int(seed_array[0]) if seeds is None else None}
    return result


def callable_subset_variance(
    scorers: Callable[[np.ndarray], float] | Mapping[str, Callable[[np.ndarray], float]],
    example_ids: Sequence,
    *,
    subset_size: int,
    n_seeds: int = 20,
    seed: int = 0,
    seeds: Sequence[int] | None = None,
    progress: bool = True,
) -> SubsetVariance:
    """Seed variance of any evaluation: ``score(subset_ids) -> float`` is called once per seed and system.

    ``scorers`` is one callable or a mapping system → callable (all get the same subset under
    one seed). ``example_ids`` is the pool; it is sorted by the ids' text before drawing (as
    the table path does) so that the subsets do not depend on the order the pool was listed
    in; each callable receives an array of the user's own ids. A progress bar shows the
    K × M calls.

    Parameters
    ----------
    scorers : callable or mapping
        ``score(subset_ids) -> float``, or system → such a callable.
    example_ids : sequence
        The pool.
    subset_size, n_seeds, seed
        As for :func:`subset_variance`.

    Returns
    -------
    SubsetVariance

    Examples
    --------
    >>> import numpy as np
    >>> from seedscope import callable_subset_variance
    >>> correct = dict(enumerate(np.random.default_rng(0).random(500) < 0.8))
    >>> result = callable_subset_variance(lambda ids: float(np.mean([correct[i] for i in ids])), list(range(500)),
    ...                                   subset_size=100, n_seeds=10)
    >>> result.theta.shape
    (10, 1)
    """
    if callable(scorers):
        scorers = {"system": scorers}
    if not scorers:
        raise SeedscopeError("no scoring function given")
    pool_ids = np.empty(len(example_ids), dtype=object)
    pool_ids[:] = sorted(example_ids, key=str)
    if len({str(i) for i in pool_ids}) != len(pool_ids):
        raise SeedscopeError("the example pool lists some example id more than once")
    seed_array = subset_seeds(n_seeds, seed) if seeds is None else np.asarray(seeds, dtype=np.int64)
    subsets = draw_subsets(len(pool_ids), subset_size, seed_array)
    systems = list(scorers)
    theta = np.empty((len(seed_array), len(systems)))
    jobs = [(k, m) for k in range(len(seed_array)) for m in range(len(systems))]
    for k, m in steps(jobs, "scoring subsets", enabled=progress):
        value = float(scorers[systems[m]](pool_ids[subsets[k]]))
        if not math.isfinite(value):
            raise SeedscopeError(f"the score of system {systems[m]} on the subset of seed {seed_array[k]} is {value}")
        theta[k, m] = value
    result = summarize_thetas(
        _theta_frame(theta, seed_array, systems), score="callable", subset_size=subset_size, pool_size=len(pool_ids)
    )
    result.settings = {"seed": int(seed_array[0]) if seeds is None else None}
    return result
