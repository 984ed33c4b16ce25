"""Comparing systems whose answers are sampled: paired by item, with the sampling variance included.

For each pair of systems (A, B) on the items both answered, with x_i each system's estimate of
item i (the chosen estimator, pooled over its runs) and d_i = x_i^A − x_i^B:

* the mean difference Δ with its standard error sqrt(S²(d)/N) — the per-item estimates carry
  their sampling noise, so this is Miller's (2024) paired, item-clustered SE — a normal interval,
  a two-sided p-value and the minimum detectable difference at the chosen power;
* the ranking-inversion probability: the chance that one run of each system orders them
  against Δ, Φ(−|Δ| / sqrt(v_A + v_B)) with v the variance of one run's score on these items
  (across its runs when there are two or more; for pass@1 / avg@n of a single run, the
  within-item sampling variance E[σ_i²/n_i] / N), beside the share of observed run pairs that do.
"""

from __future__ import annotations

import itertools
import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd
from scipy import special

from seedscope.analysis.error_bars import minimum_detectable_difference
from seedscope.analysis.sampling import check_ks, item_estimates, item_means, run_scores
from seedscope.errors import SeedscopeError, UnstableEstimateWarning
from seedscope.notes import noted
from seedscope.predictions import EXAMPLE_ID, RUN
from seedscope.samples import check_sample_table, item_pools
from seedscope.serialize import json_ready
from seedscope.validation import check_confidence, check_power

ESTIMATOR = re.compile(r"^(pass@|pass\^|maj@|mG-Pass@)(\d+)$|^G-Pass@(\d+)_([0-9.]+)$|^avg@n$")
#: estimators whose one-run variance follows from the within-item variance of the samples
MEAN_OF_SAMPLES = ("pass@1", "avg@n")


@dataclass
class SampledComparison:
    """Systems compared on one sampling estimator, item by item.

    ``systems``: per system its mean, runs, items and the variance of one run's score
    (``run_variance``). ``pairs``: per ordered pair (A, B) the mean difference A − B on their
    common items, its SE, interval, p-value, minimum detectable difference, the ranking-inversion
    probability and the observed share of inverted run pairs.

    Parameters
    ----------
    estimator : str
        The estimator compared; the other fields are the DataFrames named above, the ``settings``
        used and ``notes``.

    Returns
    -------
    SampledComparison
        Built by :func:`compare_samples`; :meth:`to_dict` for JSON.

    Examples
    --------
    >>> import pandas as pd
    >>> from seedscope import compare_samples
    >>> def table(correct):  # 3 items, 4 samples each, one run
    ...     return pd.DataFrame({"run": "s1", "example_id": [i for i in range(3) for _ in range(4)],
    ...                          "sample": list(range(4)) * 3, "correct": correct})
    >>> a = table([1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1])
    >>> b = table([1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0])
    >>> result = compare_samples({"A": a, "B": b}, estimator="pass@1")
    >>> round(float(result.pairs["difference"].iloc[0]), 4), round(float(result.pairs["inversion_probability"].iloc[0]), 4)
    (0.4167, 0.0235)
    """

    estimator: str
    systems: pd.DataFrame
    pairs: pd.DataFrame
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``seedscope compare`` on sample tables."""
        systems = {str(name): {k: json_ready(v) for k, v in row.items()} for name, row in self.systems.iterrows()}
        pairs = [{"system_a": a, "system_b": b, **{k: json_ready(v) for k, v in row.items()}}
                 for (a, b), row in self.pairs.iterrows()]
        return {"estimator": self.estimator, "systems": systems, "pairs": pairs,
                "settings": {k: json_ready(v) for k, v in self.settings.items()}, "notes": list(self.notes)}


def estimator_name(estimator: str) -> str:
    """The estimator's column name (``G-Pass@4_0.50`` → ``G-Pass@4_0.5``), or one clear error."""
    found = ESTIMATOR.match(estimator)
    if found is None:
        raise SeedscopeError(f"unknown sampling estimator {estimator!r}: use pass@k, pass^k, maj@k, G-Pass@k_τ, "
                             "mG-Pass@k (k a number, e.g. pass@1, G-Pass@4_0.5) or avg@n")
    return f"G-Pass@{found.group(3)}_{float(found.group(4)):g}" if found.group(4) else estimator


def _estimates(table: pd.DataFrame, estimator: str, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(per-item estimates of the one ``estimator`` (a column name), the pools) of one system's sample table."""
    found = ESTIMATOR.match(estimator)
    pools = item_pools(check_sample_table(table, f"system {name}"))
    k = found.group(2) or found.group(3)
    ks = check_ks([int(k)], pools) if k else []
    thresholds = [float(found.group(4))] if found.group(4) else []
    if estimator.startswith("maj@") and "answer_counts" not in pools:
        raise SeedscopeError(f"system {name}: maj@k votes on the answers, and its sample table has no prediction column")
    per_item = item_estimates(pools, ks, thresholds)
    return per_item[[estimator]], pools


def _run_variance(per_item: pd.DataFrame, pools: pd.DataFrame, estimator: str, items: pd.Index) -> float:
    """Variance of one run's score on ``items``: across runs, or from the samples for a single run's mean."""
    kept = per_item[per_item.index.get_level_values(EXAMPLE_ID).isin(items)]
    scores = run_scores(kept, estimator)
    if len(scores) >= 2:
        return float(scores.var(ddof=1))
    if estimator in MEAN_OF_SAMPLES:
        kept_pools = pools[pools.index.get_level_values(EXAMPLE_ID).isin(items)]
        n, c = kept_pools["n"].to_numpy(float), kept_pools["c"].to_numpy(float)
        within = np.where(n > 1, c * (n - c) / (n * np.maximum(n - 1, 1)), 0.0)
        return float(np.mean(within / n) / len(n))
    warnings.warn(f"one run of {estimator} gives no run-to-run variance: its ranking-inversion probability needs "
                  "two runs or more (or pass@1 / avg@n)", UnstableEstimateWarning, stacklevel=4)
    return float("nan")


@noted
def compare_samples(
    tables: Mapping[str, pd.DataFrame],
    *,
    estimator: str = "pass@1",
    confidence: float = 0.95,
    power: float = 0.8,
) -> SampledComparison:
    """Compare systems on sampled runs, paired by item, with the sampling variance included.

    Parameters
    ----------
    tables : mapping
        System name → its sample table (:mod:`seedscope.samples`; runs = sampling seeds).
    estimator : str, default "pass@1"
        pass@k, pass^k, maj@k, G-Pass@k_τ, mG-Pass@k or avg@n.
    confidence, power : float
        Of the interval and p-value, and of the minimum detectable difference.

    Returns
    -------
    SampledComparison

    Examples
    --------
    >>> import pandas as pd
    >>> from seedscope import compare_samples
    >>> def table(correct):  # 3 items, 4 samples each, one run
    ...     return pd.DataFrame({"run": "s1", "example_id": [i for i in range(3) for _ in range(4)],
    ...                          "sample": list(range(4)) * 3, "correct": correct})
    >>> a = table([1, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 1])
    >>> b = table([1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 1, 0])
    >>> result = compare_samples({"A": a, "B": b}, estimator="pass@1")
    >>> round(float(result.pairs["difference"].iloc[0]), 4), round(float(result.pairs["inversion_probability"].iloc[0]), 4)
    (0.4167, 0.0235)
    """
    alpha = check_confidence(confidence)
    check_power(power)
    estimator = estimator_name(estimator)
    if len(tables) < 2:
        raise SeedscopeError(f"a comparison needs at least two systems, got {len(tables)}")
    estimates = {name: _estimates(table, estimator, name) for name, table in tables.items()}
    means = {name: item_means(per_item, estimator) for name, (per_item, _) in estimates.items()}
    z = special.ndtri(1 - alpha)
    systems, pairs = {}, {}
    for a, b in itertools.combinations(tables, 2):
        items = means[a].index.intersection(means[b].index)
        if len(items) < 2:
            raise SeedscopeError(f"systems {a} and {b} share {len(items)} item(s); a paired comparison needs two or more")
        dropped = len(means[a].index.union(means[b].index)) - len(items)
        if dropped:
            warnings.warn(f"{a} vs {b}: {dropped} item(s) not answered by both are left out", UnstableEstimateWarning,
                          stacklevel=3)
        differences = (means[a][items] - means[b][items]).to_numpy()
        delta, sd = float(differences.mean()), float(differences.std(ddof=1))
        se = sd / np.sqrt(len(items))
        variances = [_run_variance(*estimates[name], estimator, items) for name in (a, b)]
        pairs[(a, b)] = {
            "difference": delta, "se": se, "ci_low": delta - z * se, "ci_high": delta + z * se,
            "p_value": float(2 * special.ndtr(-abs(delta) / se)) if se > 0 else float(delta == 0),
            "mdd": minimum_detectable_difference(sd, len(items), confidence=confidence, power=power),
            "inversion_probability": _inversion(delta, sum(variances)),
            "inversion_share": _inverted_share(run_scores(estimates[a][0].loc[(slice(None), items), :], estimator),
                                               run_scores(estimates[b][0].loc[(slice(None), items), :], estimator),
                                               delta),
            "n_items": len(items),
        }
        for name, variance in zip((a, b), variances):
            systems.setdefault(name, {"mean": float(means[name].mean()), "n_runs": int(
                estimates[name][0].index.get_level_values(RUN).nunique()), "n_items": len(means[name]),
                "run_variance": variance})
    pair_frame = pd.DataFrame.from_dict(pairs, orient="index")
    pair_frame.index.names = ["system_a", "system_b"]
    return SampledComparison(estimator=estimator, systems=pd.DataFrame.from_dict(systems, orient="index"),
                             pairs=pair_frame, settings={"confidence": confidence, "power": power})


def _inversion(delta: float, variance: float) -> float:
    """Φ(−|Δ| / sqrt(v)): the chance that one run of each system orders them against the mean difference Δ."""
    if not np.isfinite(variance):
        return float("nan")
    if variance == 0:
        return 0.5 if delta == 0 else 0.0
    return float(special.ndtr(-abs(delta) / np.sqrt(variance)))


def _inverted_share(scores_a: pd.Series, scores_b: pd.Series, delta: float) -> float:
    """Share of (run of A, run of B) pairs ordered against Δ (a tie counts one half); NaN when Δ = 0."""
    if delta == 0:
        return float("nan")
    gaps = (scores_a.to_numpy()[:, None] - scores_b.to_numpy()[None, :]) * np.sign(delta)
    return float(np.mean(gaps < 0) + 0.5 * np.mean(gaps == 0))
