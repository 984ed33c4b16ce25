"""Sampled generations as a randomness factor: the estimators of every run, their spread, error bars and stability.

A run is one sampling seed of one system; each of its items holds a pool of n sampled answers
(:mod:`seedscope.samples`). For every run this module computes pass@k, pass^k, maj@k,
G-Pass@k_τ, mG-Pass@k and avg@n per item (:mod:`seedscope.metrics.sampled`), then

* the spread of each run's mean across sampling seeds (the macro table: mean, VAR as published,
  sample std, CV, bootstrap and t intervals);
* the standard error over items of one run's mean, clustered by item so that it includes the
  within-item sampling variance (Miller 2024): SE² = S²(x_i) / N over the per-item estimates
  x_i, which for avg@n splits into Var(x) + E[σ_i²]/K — the items' own spread and what K samples
  per item leave of the sampling noise (:func:`variance_components`);
* the stability of each item's answers over its samples (micro: CON, the share of sample pairs
  that agree; CCON, the share that agree and are correct).
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import special

from seedscope.errors import SeedscopeError, SkippedEstimateWarning, UnevenSamplesWarning
from seedscope.analysis.planning import sampling_plan
from seedscope.metrics import sampled
from seedscope.metrics.macro import summarize_runs
from seedscope.notes import noted
from seedscope.predictions import EXAMPLE_ID, PREDICTION, RUN
from seedscope.samples import check_sample_table, item_pools
from seedscope.serialize import json_ready
from seedscope.validation import check_confidence, validate_params

#: the estimator families, as the JSON names them
FAMILIES = ("pass@k", "pass^k", "maj@k", "G-Pass@k", "mG-Pass@k")


def default_ks(n: int) -> list[int]:
    """k = 1, 2, 5, 10, 20, 50 … up to n, and n itself."""
    series = [step * 10**power for power in range(int(math.log10(max(n, 1))) + 1) for step in (1, 2, 5)]
    return sorted({k for k in series if k <= n} | {n})


def check_ks(ks: Sequence[int] | None, pools: pd.DataFrame) -> list[int]:
    """The ks asked for (default :func:`default_ks` of the fewest samples), each between 1 and every item's n."""
    fewest = pools["n"].idxmin()
    n_min = int(pools.loc[fewest, "n"])
    if ks is None:
        return default_ks(n_min)
    ks = sorted({int(k) for k in ks})
    for k in ks:
        if k > n_min and pools["n"].nunique() > 1:
            raise SeedscopeError(f"k = {k} is more than the samples of item {fewest[1]!r} in run {fewest[0]!r} "
                                 f"(n = {n_min}, the fewest of any item): every k must be ≤ {n_min}")
        sampled.check_k(k, n_min)
    return ks


def item_estimates(pools: pd.DataFrame, ks: Sequence[int], thresholds: Sequence[float]) -> pd.DataFrame:
    """Every estimator of every (run, item) pool: columns pass@k, pass^k, maj@k (with predictions), G-Pass@k_τ,
    mG-Pass@k for each k, and avg@n."""
    n, c = pools["n"].to_numpy(), pools["c"].to_numpy()
    columns: dict[str, np.ndarray] = {}
    for k in ks:
        columns[f"pass@{k}"] = sampled.pass_at_k(n, c, k)
        columns[f"pass^{k}"] = sampled.pass_hat_k(n, c, k)
        if "answer_counts" in pools:
            columns[f"maj@{k}"] = sampled.maj_at_k(pools["answer_counts"].tolist(), pools["answer_correct"].tolist(), k)
        for tau in thresholds:
            columns[f"G-Pass@{k}_{tau:g}"] = sampled.g_pass_at_k(n, c, k, tau)
        columns[f"mG-Pass@{k}"] = sampled.mg_pass_at_k(n, c, k)
    columns["avg@n"] = sampled.avg_at_n(n, c)
    return pd.DataFrame(columns, index=pools.index)


def variance_components(n, c) -> pd.Series:
    """Miller's (2024) split of the variance of avg@n over N items with K samples each.

    ``between``: Var(x), the spread of the items' true success rates, estimated as the sample
    variance S² of the per-item rates less the sampling part (floored at 0, for planning);
    ``within``: E[σ_i²], the mean unbiased within-item variance c(n−c)/(n(n−1)); ``sampling``:
    E[σ_i²/n_i], what the samples leave of it. ``se`` = sqrt(S²/N), the unbiased estimate of
    sqrt((Var(x) + E[σ_i²]/K)/N) — the item-clustered standard error of the mean.
    """
    n, c = sampled.check_pool(n, c)
    if len(n) < 2:
        raise SeedscopeError("a standard error over items needs at least two items")
    rates = c / n
    within = sampled.within_variance(n, c)
    sampling_part, spread = float(np.mean(within / n)), float(rates.var(ddof=1))
    between = max(0.0, spread - sampling_part)
    se = math.sqrt(spread / len(n))
    return pd.Series({"between": between, "within": float(within.mean()), "sampling": sampling_part,
                      "samples_per_item": float(n.mean()), "items": float(len(n)), "se": se})


def item_stability(pools: pd.DataFrame) -> pd.DataFrame:
    """Per pool: ``con`` (share of sample pairs giving the same answer; NaN without predictions), ``ccon``
    (share of pairs both correct), ``correct_rate`` and a ``category``: robust (every sample correct),
    consistently_wrong (one wrong answer), unstable (some right, some wrong), wrong_varying (never right, the
    wrong answers differ), or without predictions always_wrong."""
    n, c = pools["n"].to_numpy(float), pools["c"].to_numpy(float)
    pairs = np.where(n > 1, n * (n - 1), np.nan)
    if "answer_counts" in pools:
        same = np.array([sum(m * (m - 1) for m in counts) for counts in pools["answer_counts"]], dtype=float)
        distinct = pools["answer_counts"].map(len).to_numpy()
    else:
        same, distinct = np.full(len(n), np.nan), np.full(len(n), 0)
    category = np.select([c == n, c > 0, distinct == 0, distinct == 1],
                         ["robust", "unstable", "always_wrong", "consistently_wrong"], "wrong_varying")
    return pd.DataFrame({"n": n.astype(int), "correct_rate": c / n, "con": same / pairs, "ccon": c * (c - 1) / pairs,
                         "category": category}, index=pools.index)


@dataclass
class SamplingAnalysis:
    """The estimators of sampled runs with their spread across seeds, standard errors and stability.

    ``per_item``: one row per (run, example_id), one column per estimator (``pass@4``,
    ``pass^4``, ``maj@4``, ``G-Pass@4_0.5``, ``mG-Pass@4``, ``avg@n``). ``per_run``: their means over
    items. ``macro``: the spread of ``per_run`` across runs (sampling seeds): mean,
    var_published (population std), std_sample, cv, min, max, bootstrap and t CIs. ``errors``:
    per estimator the clustered standard error over items of one run's mean (root mean square over
    runs) and its normal interval. ``variance``: Miller's split of avg@n (between items,
    within-item sampling), over every run's samples of each item; ``plan``: from it, the half-width
    at this many items and the items ±0.01 / 0.02 / 0.05 need, per number of samples per item
    (:func:`~seedscope.analysis.planning.sampling_plan`). ``micro``: per run the mean CON and CCON over its samples;
    ``stability``: per (run, item) pool. ``notes``: the warnings raised.

    Parameters
    ----------
    ks, thresholds : list
        The ks and G-Pass@k thresholds τ; the other fields are the DataFrames named above, the
        ``settings`` used and ``notes``.

    Returns
    -------
    SamplingAnalysis
        Built by :func:`analyze_samples`; :meth:`to_dict` for JSON.

    Examples
    --------
    >>> import pandas as pd
    >>> from seedscope import analyze_samples
    >>> table = pd.DataFrame({"run": "s1", "example_id": [1, 1, 1, 1, 2, 2, 2, 2], "sample": [0, 1, 2, 3] * 2,
    ...                       "correct": [1, 0, 0, 1, 0, 0, 0, 1],
    ...                       "prediction": ["4", "5", "5", "4", "7", "7", "8", "6"]})
    >>> result = analyze_samples(table, k=[1, 2], n_boot=200)
    >>> result.per_run[["pass@1", "pass@2", "pass^2", "maj@2"]].round(4).to_dict("records")
    [{'pass@1': 0.375, 'pass@2': 0.6667, 'pass^2': 0.0833, 'maj@2': 0.375}]
    """

    ks: list[int]
    thresholds: list[float]
    per_item: pd.DataFrame
    per_run: pd.DataFrame
    macro: pd.DataFrame
    errors: pd.DataFrame
    variance: pd.Series
    plan: pd.DataFrame
    micro: pd.DataFrame
    stability: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def family(self, name: str) -> dict[str, Any]:
        """``{"1": mean, "2": …}`` for pass@k / pass^k / maj@k / mG-Pass@k, ``{"4": {"0.5": …}}`` for G-Pass@k."""
        means = self.per_run.mean()
        stem = name[:-1]
        if name == "G-Pass@k":
            return {str(k): {f"{tau:g}": json_ready(means[f"G-Pass@{k}_{tau:g}"]) for tau in self.thresholds}
                    for k in self.ks}
        return {str(k): json_ready(means[f"{stem}{k}"]) for k in self.ks if f"{stem}{k}" in means}

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``seedscope analyze`` on a sample table (schema in docs/how-to/sampling.md)."""
        return {
            **{name: self.family(name) for name in FAMILIES},
            "avg@n": json_ready(self.per_run["avg@n"].mean()),
            "ks": self.ks, "thresholds": self.thresholds,
            "n_runs": int(self.per_run.shape[0]), "n_items": int(self.per_item.index.get_level_values(1).nunique()),
            "per_run": _records(self.per_run), "macro": _records(self.macro), "standard_errors": _records(self.errors),
            "variance": {k: json_ready(v) for k, v in self.variance.items()}, "plan": _records(self.plan),
            "micro": _records(self.micro),
            "settings": {k: json_ready(v) for k, v in self.settings.items()}, "notes": list(self.notes),
        }


def _records(frame: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Row name → column → JSON value."""
    return {str(name): {key: json_ready(value) for key, value in row.items()} for name, row in frame.iterrows()}


@noted
def analyze_samples(
    table: pd.DataFrame,
    k: Sequence[int] | int | None = None,
    *,
    thresholds: Sequence[float] = sampled.DEFAULT_THRESHOLDS,
    n_boot: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
) -> SamplingAnalysis:
    """The sampling estimators of a sample table (one system; each run one sampling seed), with their spread.

    Parameters
    ----------
    table : pandas.DataFrame
        A sample table (:mod:`seedscope.samples`): run, example_id, sample, correct, and
        ``prediction`` for maj@k and CON.
    k : int or list of int, optional
        The ks of pass@k, pass^k, maj@k and G-Pass@k; default 1, 2, 5, 10 … up to n, and n.
    thresholds : list of float
        The τ of G-Pass@k_τ (default 0.25, 0.5, 0.75, 1).
    n_boot, confidence, seed
        The bootstrap of the intervals over runs.

    Returns
    -------
    SamplingAnalysis

    Examples
    --------
    >>> import pandas as pd
    >>> from seedscope import analyze_samples
    >>> table = pd.DataFrame({"run": "s1", "example_id": [1, 1, 1, 1, 2, 2, 2, 2], "sample": [0, 1, 2, 3] * 2,
    ...                       "correct": [1, 0, 0, 1, 0, 0, 0, 1],
    ...                       "prediction": ["4", "5", "5", "4", "7", "7", "8", "6"]})
    >>> result = analyze_samples(table, k=[1, 2], n_boot=200)
    >>> result.per_run[["pass@1", "pass@2", "pass^2", "maj@2"]].round(4).to_dict("records")
    [{'pass@1': 0.375, 'pass@2': 0.6667, 'pass^2': 0.0833, 'maj@2': 0.375}]
    """
    validate_params(n_boot=n_boot, confidence=confidence)
    table = check_sample_table(table)
    pools = item_pools(table)
    if "answer_counts" not in pools:
        why = (f"{int(table[PREDICTION].isna().sum())} sample(s) have no prediction" if PREDICTION in table
               else "the table has no prediction column")
        warnings.warn(f"maj@k and CON vote on the answers, and {why}: both are left out", SkippedEstimateWarning,
                      stacklevel=3)
    if pools["n"].nunique() > 1:
        warnings.warn(f"items hold different numbers of samples (n = {pools['n'].min()} … {pools['n'].max()}): "
                      "every estimator uses each item's own n", UnevenSamplesWarning, stacklevel=3)
    ks = check_ks([k] if isinstance(k, (int, np.integer)) else k, pools)
    thresholds = [float(tau) for tau in thresholds]
    per_item = item_estimates(pools, ks, thresholds)
    per_run = per_item.groupby(level=RUN, sort=True).mean()
    macro = summarize_runs(per_run, n_boot=n_boot, confidence=confidence, seed=seed)
    stability = item_stability(pools)
    pooled = pools.groupby(level=EXAMPLE_ID, sort=True)[["n", "c"]].sum()
    variance = variance_components(pooled["n"], pooled["c"])
    plan = sampling_plan(variance["between"], variance["within"], items=len(pooled), confidence=confidence,
                         samples=sorted({1, 2, 4, 8, 16, 32, 64, int(pooled["n"].max())}))
    micro = stability[["con", "ccon"]].groupby(level=RUN, sort=True).mean()
    micro["n_items"] = stability.groupby(level=RUN, sort=True).size()
    return SamplingAnalysis(
        ks=ks, thresholds=thresholds, per_item=per_item, per_run=per_run, macro=macro,
        errors=standard_errors(per_item, confidence), variance=variance, plan=plan, micro=micro, stability=stability,
        settings={"n_boot": n_boot, "confidence": confidence, "seed": seed},
    )


def standard_errors(per_item: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Per estimator: its mean, the standard error of one run's mean over items (sqrt(S²(x_i)/N), the item-clustered
    SE, root mean square over runs) and the normal interval mean ± z·SE, clipped to [0, 1] where every estimator lies."""
    z = special.ndtri(1 - check_confidence(confidence))
    grouped = per_item.groupby(level=RUN, sort=True)
    counts = grouped.size().to_numpy()[:, None]
    if counts.min() < 2:
        raise SeedscopeError("a standard error over items needs at least two items per run")
    se = np.sqrt(np.mean(grouped.var(ddof=1).to_numpy() / counts, axis=0))
    mean = grouped.mean().mean().to_numpy()
    return pd.DataFrame({"mean": mean, "se": se, "ci_low": np.clip(mean - z * se, 0.0, 1.0),
                         "ci_high": np.clip(mean + z * se, 0.0, 1.0)},
                        index=pd.Index(per_item.columns, name="estimator"))


def run_scores(per_item: pd.DataFrame, column: str) -> pd.Series:
    """One estimator's mean over items, per run."""
    return per_item[column].groupby(level=RUN, sort=True).mean()


def item_means(per_item: pd.DataFrame, column: str) -> pd.Series:
    """One estimator per item, averaged over runs (the pooled per-item estimate of a system)."""
    return per_item[column].groupby(level=EXAMPLE_ID, sort=True).mean()
