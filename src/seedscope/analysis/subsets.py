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
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
import scipy.sparse as sparse
from rich.progress import track
from scipy import stats

from seedscope.api import json_ready
from seedscope.errors import SeedscopeError
from seedscope.metrics.bootstrap import check_confidence, check_resamples

SYSTEM, EXAMPLE_ID, SCORE = "system", "example_id", "score"
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
#: values gathered per chunk when a selection or a resampling is materialised
CHUNK_VALUES = 20_000_000


# --------------------------------------------------------------------------- score functions


@dataclass(frozen=True)
class ScoreSpec:
    """How θ is computed from per-example columns: a function of the columns' subset means.

    ``mean`` (column ``score``): θ = mean of the score. ``accuracy`` (columns ``prediction``,
    ``label``): θ = mean of prediction == label. ``ratio`` (columns num, base, ref):
    θ = (m(num) − m(base)) / (m(ref) − m(base)), e.g. faithfulness =
    (m(circuit) − m(empty)) / (m(model) − m(empty)).
    """

    kind: Literal["mean", "accuracy", "ratio"]
    columns: tuple[str, ...]

    @property
    def text(self) -> str:
        defaults = {"mean": (SCORE,), "accuracy": ("prediction", "label")}
        if defaults.get(self.kind) == self.columns:
            return self.kind
        return f"{self.kind}:{','.join(self.columns)}"

    @property
    def n_values(self) -> int:
        """How many per-example value columns θ needs (accuracy collapses to one)."""
        return 3 if self.kind == "ratio" else 1

    def values(self, table: pd.DataFrame, source: str) -> np.ndarray:
        """Per-example value columns (rows of ``table``) as an (rows × n_values) float array."""
        missing = [c for c in self.columns if c not in table.columns]
        if missing:
            raise SeedscopeError(
                f"{source}: score '{self.text}' needs column(s) {', '.join(missing)}; "
                f"found {', '.join(map(str, table.columns))}"
            )
        if self.kind == "accuracy":
            prediction, label = (table[c] for c in self.columns)
            for name, column in zip(self.columns, (prediction, label)):
                if column.isna().any():
                    raise SeedscopeError(f"{source}: column {name} has missing values (e.g. example {_first_id(table, column.isna())})")
            return _equal(prediction, label).astype(float)[:, None]
        out = np.empty((len(table), len(self.columns)))
        for j, name in enumerate(self.columns):
            numeric = pd.to_numeric(table[name], errors="coerce")
            bad = numeric.isna() | ~np.isfinite(numeric.to_numpy(dtype=float, na_value=np.nan))
            if bad.any():
                raise SeedscopeError(
                    f"{source}: column {name} holds a NaN, infinite or non-numeric score (example {_first_id(table, bad)})"
                )
            out[:, j] = numeric.to_numpy(dtype=float)
        return out

    def combine(self, means: np.ndarray) -> np.ndarray:
        """θ from column means (last axis = this spec's value columns); a zero ratio denominator gives NaN."""
        if self.kind != "ratio":
            return means[..., 0]
        numerator = means[..., 0] - means[..., 1]
        denominator = means[..., 2] - means[..., 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denominator == 0, np.nan, numerator / np.where(denominator == 0, 1, denominator))


def _equal(prediction: pd.Series, label: pd.Series) -> np.ndarray:
    """Prediction == label: numerically when both columns are numbers (so 1 equals 1.0), else as text."""
    numbers = [pd.to_numeric(column, errors="coerce") for column in (prediction, label)]
    if all(n.notna().all() for n in numbers):
        return numbers[0].to_numpy(dtype=float) == numbers[1].to_numpy(dtype=float)
    return prediction.astype(str).to_numpy() == label.astype(str).to_numpy()


def _first_id(table: pd.DataFrame, mask: pd.Series) -> str:
    rows = table.loc[mask.to_numpy()]
    return str(rows[EXAMPLE_ID].iloc[0]) if EXAMPLE_ID in rows.columns else str(rows.index[0])


def parse_score(text: str | ScoreSpec) -> ScoreSpec:
    """Parse ``mean[:col]``, ``accuracy[:prediction,label]`` or ``ratio:num,base,ref``."""
    if isinstance(text, ScoreSpec):
        return text
    kind, _, rest = str(text).partition(":")
    columns = tuple(c.strip() for c in rest.split(",")) if rest else ()
    expected = {"mean": 1, "accuracy": 2, "ratio": 3}
    if kind not in expected:
        raise SeedscopeError(f"unknown score '{text}': use mean[:column], accuracy[:prediction,label] or ratio:num,base,ref")
    if not columns and kind == "ratio":
        raise SeedscopeError("a ratio score names its three columns: ratio:num,base,ref, e.g. ratio:circuit,empty,model")
    columns = columns or {"mean": (SCORE,), "accuracy": ("prediction", "label")}[kind]
    if len(columns) != expected[kind] or not all(columns):
        raise SeedscopeError(f"score '{text}' needs {expected[kind]} column name(s) after '{kind}:'")
    return ScoreSpec(kind, columns)


# --------------------------------------------------------------------------- pool and subsets


@dataclass(frozen=True)
class ScorePool:
    """M systems scored on the same N examples: ``values`` is M × N × C (C value columns)."""

    systems: list[str]
    example_ids: np.ndarray
    values: np.ndarray
    spec: ScoreSpec

    @property
    def n_examples(self) -> int:
        return len(self.example_ids)

    def theta(self, means: np.ndarray) -> np.ndarray:
        return self.spec.combine(means)


def score_pool(table: pd.DataFrame, score: str | ScoreSpec = "mean", source: str = "scores") -> ScorePool:
    """Check a long score table (``system``, ``example_id``, value columns) and make it dense.

    Every system must cover exactly the same example ids, once each, with finite scores.
    """
    spec = parse_score(score)
    for column in (SYSTEM, EXAMPLE_ID):
        if column not in table.columns:
            raise SeedscopeError(f"{source}: missing column {column}; found {', '.join(map(str, table.columns))}")
    if table.empty:
        raise SeedscopeError(f"{source}: no rows")
    table = table.assign(**{SYSTEM: table[SYSTEM].astype(str), EXAMPLE_ID: table[EXAMPLE_ID].astype(str)})
    duplicated = table.duplicated([SYSTEM, EXAMPLE_ID])
    if duplicated.any():
        row = table.loc[duplicated].iloc[0]
        raise SeedscopeError(f"{source}: system {row[SYSTEM]} scores example {row[EXAMPLE_ID]} more than once")
    systems = list(dict.fromkeys(table[SYSTEM]))
    ids = {name: set(group) for name, group in table.groupby(SYSTEM, sort=False)[EXAMPLE_ID]}
    reference = ids[systems[0]]
    for name in systems[1:]:
        if ids[name] != reference:
            lacking, extra = sorted(reference - ids[name]), sorted(ids[name] - reference)
            detail = "; ".join(
                f"{what} {len(found)} (e.g. {', '.join(found[:3])})"
                for what, found in (("lacks", lacking), ("adds", extra))
                if found
            )
            raise SeedscopeError(
                f"systems are scored on different example ids: {name} vs {systems[0]}: {name} {detail}"
            )
    example_ids = np.array(sorted(reference), dtype=object)
    values_by_row = spec.values(table, source)
    row = pd.Index(systems).get_indexer(table[SYSTEM])
    col = pd.Index(example_ids).get_indexer(table[EXAMPLE_ID])
    values = np.empty((len(systems), len(example_ids), values_by_row.shape[1]))
    values[row, col] = values_by_row
    return ScorePool(systems, example_ids, values, spec)


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


# --------------------------------------------------------------------------- summaries


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
        cv = np.where(std == 0, 0.0, std / np.abs(mean))
    cv = np.where(np.isinf(cv), np.nan, cv)
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
    against it); seed_robust = every Δ_k > 0 or every Δ_k < 0.
    """
    rows = []
    for a, b in pair_names(list(theta.columns)):
        delta = theta[a].to_numpy() - theta[b].to_numpy()
        positive, negative = int((delta > 0).sum()), int((delta < 0).sum())
        robust = positive == len(delta) or negative == len(delta)
        rows.append(
            {
                "system_a": a,
                "system_b": b,
                "mean_delta": float(delta.mean()),
                "std_delta": float(delta.std(ddof=1)),
                "n_positive": positive,
                "n_negative": negative,
                "n_zero": len(delta) - positive - negative,
                "sign_consistency": max(positive, negative) / len(delta),
                "seed_robust": robust,
                "advice": ROBUST_ADVICE if robust else NOT_ROBUST_ADVICE,
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
        """The JSON document (schema in docs/subsets.md). CV is null when the mean is 0."""
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
            if self.needed_size is not None:
                entry["needed_subset_size"] = json_ready(self.needed_size.loc[name, "needed_subset_size"])
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
    for k, m in track(jobs, description="scoring subsets", disable=not progress, transient=True):
        value = float(scorers[systems[m]](pool_ids[subsets[k]]))
        if not math.isfinite(value):
            raise SeedscopeError(f"the score of system {systems[m]} on the subset of seed {seed_array[k]} is {value}")
        theta[k, m] = value
    result = summarize_thetas(
        _theta_frame(theta, seed_array, systems), score="callable", subset_size=subset_size, pool_size=len(pool_ids)
    )
    result.settings = {"seed": int(seed_array[0]) if seeds is None else None}
    return result


# --------------------------------------------------------------------------- full pool: CI and paired test


def _mean_of_rows(values: np.ndarray, index: np.ndarray) -> np.ndarray:
    """Column means of ``values`` (N × D) over each row of resampled positions ``index`` (… × N)."""
    return values[index].mean(axis=-2)


def _batch(pool_size: int, width: int) -> int:
    return max(1, CHUNK_VALUES // max(1, pool_size * width))


def full_pool_ci(
    pool: ScorePool, *, n_boot: int = 2000, confidence: float = 0.95, seed: int = 0, method: str = "percentile"
) -> pd.DataFrame:
    """Each system's score on the whole pool with a bootstrap CI over examples (scipy.stats.bootstrap).

    The examples are resampled by position, so the ratio score's three columns move
    together. The same ``seed`` gives the same resamples for every system and the same interval.
    """
    check_confidence(confidence)
    positions = np.arange(pool.n_examples)
    rows = []
    for m, name in enumerate(pool.systems):
        values = pool.values[m]
        point = float(pool.theta(values.mean(axis=0)))
        if math.isnan(point):
            raise SeedscopeError(
                f"ratio score undefined: m({pool.spec.columns[2]}) − m({pool.spec.columns[1]}) is 0 for system "
                f"{name} on the full pool, so the denominator is zero"
            )

        def statistic(index: np.ndarray, axis: int = -1) -> np.ndarray:
            return pool.theta(_mean_of_rows(values, index))

        low, high = _bootstrap_interval(statistic, positions, n_boot, confidence, seed, method, values.shape[1])
        rows.append({"score": point, "ci_low": low, "ci_high": high})
    return pd.DataFrame(rows, index=pd.Index(pool.systems, name=SYSTEM))


def _bootstrap_interval(statistic, positions, n_boot, confidence, seed, method, width) -> tuple[float, float]:
    check_resamples(n_boot)
    with np.errstate(all="ignore"):
        result = stats.bootstrap(
            (positions,),
            statistic,
            n_resamples=n_boot,
            confidence_level=confidence,
            method=method,
            vectorized=True,
            batch=_batch(len(positions), width),
            rng=np.random.default_rng(seed),
        )
    return float(result.confidence_interval.low), float(result.confidence_interval.high)


def paired_pool_tests(
    pool: ScorePool,
    *,
    n_boot: int = 2000,
    n_permutations: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """Per pair on the full pool: Δ = θ_A − θ_B, its paired bootstrap CI and a paired permutation p-value.

    Paired: one resample of example positions serves both systems (never two independent
    resamples). The permutation test swaps A's and B's per-example values on a random set of
    examples (scipy.stats.permutation_test, one-sample sign flips used as the swap mask;
    exact enumeration when 2^N ≤ ``n_permutations``); two-sided p-value.
    """
    check_confidence(confidence)
    check_resamples(n_permutations)
    positions = np.arange(pool.n_examples)
    index = {name: m for m, name in enumerate(pool.systems)}
    rows = []
    for a, b in pair_names(pool.systems):
        values_a, values_b = pool.values[index[a]], pool.values[index[b]]
        both = np.concatenate([values_a, values_b], axis=1)
        width = values_a.shape[1]

        def difference(idx: np.ndarray, axis: int = -1) -> np.ndarray:
            means = _mean_of_rows(both, idx)
            return pool.theta(means[..., :width]) - pool.theta(means[..., width:])

        delta = float(pool.theta(values_a.mean(axis=0)) - pool.theta(values_b.mean(axis=0)))
        low, high = _bootstrap_interval(difference, positions, n_boot, confidence, seed, "percentile", 2 * width)
        p_value = paired_swap_test(values_a, values_b, pool.theta, n_permutations=n_permutations, seed=seed)
        rows.append({"system_a": a, "system_b": b, "delta": delta, "ci_low": low, "ci_high": high, "p_value": p_value})
    columns = ["system_a", "system_b", "delta", "ci_low", "ci_high", "p_value"]
    return pd.DataFrame(rows, columns=columns).set_index(["system_a", "system_b"])


def paired_swap_test(
    values_a: np.ndarray,
    values_b: np.ndarray,
    theta: Callable[[np.ndarray], np.ndarray],
    *,
    n_permutations: int = 2000,
    seed: int = 0,
) -> float:
    """Two-sided p-value of θ(A) − θ(B) under random per-example swaps of A's and B's values.

    ``values_a``/``values_b``: N × C per-example columns; ``theta`` maps column means (… × C)
    to a score. Under the null hypothesis the two systems are exchangeable on every example.
    """
    check_resamples(n_permutations)
    n_examples, width = values_a.shape
    base = values_a.sum(axis=0)
    gap = values_b - values_a  # adding gap[t] swaps example t from A to B

    def statistic(signs: np.ndarray, axis: int = -1) -> np.ndarray:
        swap = (signs < 0).astype(float)
        moved = swap @ gap  # … × C
        mean_a = (base + moved) / n_examples
        mean_b = (values_b.sum(axis=0) - moved) / n_examples
        return theta(mean_a) - theta(mean_b)

    with np.errstate(all="ignore"):
        result = stats.permutation_test(
            (np.ones(n_examples),),
            statistic,
            permutation_type="samples",
            vectorized=True,
            n_resamples=n_permutations,
            batch=_batch(n_examples, 1),
            alternative="two-sided",
            rng=np.random.default_rng(seed),
        )
    return float(result.pvalue)


# --------------------------------------------------------------------------- subset size for a target CV


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
    on every larger grid size also has CV < target (None if no grid size does). At n = N every
    subset is the whole pool, so CV = 0 there: the answer is at most N.
    """
    if not target_cv > 0:  # also refuses NaN
        raise SeedscopeError(f"the target CV must be positive, not {target_cv}")
    sizes = default_size_grid(pool.n_examples) if sizes is None else np.unique(np.asarray(sizes, dtype=np.int64))
    for size in sizes:
        check_subset_size(int(size), pool.n_examples)
    seed_array = subset_seeds(n_seeds, seed)
    cvs = np.empty((len(sizes), len(pool.systems)))
    for i, size in enumerate(track(sizes, description="subset sizes", disable=not progress, transient=True)):
        theta = subset_thetas(pool, draw_subsets(pool.n_examples, int(size), seed_array))
        summary = seed_summary(_theta_frame(theta, seed_array, pool.systems))
        cv = summary["cv"].to_numpy()
        cvs[i] = np.where(np.isnan(theta).any(axis=0), np.nan, cv)
    grid = pd.DataFrame(cvs, index=pd.Index(sizes, name="subset_size"), columns=pool.systems)
    needed = []
    for name in pool.systems:
        below = (grid[name] < target_cv).to_numpy()  # NaN compares False
        tail_ok = np.logical_and.accumulate(below[::-1])[::-1]
        needed.append(int(sizes[np.argmax(tail_ok)]) if tail_ok.any() else None)
    return grid, pd.DataFrame({"needed_subset_size": needed}, index=pd.Index(pool.systems, name=SYSTEM))


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
