"""Seed-level comparison of systems: is A better than B, given S seeds of each?

Each function is one statistic, checked against the public tools in
``../shared/reference/stat-checks.md`` — without their known defects:

* every resampling takes an explicit ``seed`` (a fresh ``numpy`` Generator), so the same
  seed gives the same interval (rliable's seeded CI does not);
* the "paired" bootstraps really resample matched seeds / examples together;
* McNemar with no discordant pair returns statistic 0 and p = 1 (HF evaluate divides by 0);
* Holm's step-down keeps each adjusted p-value in its input position and is monotone
  (deepsig's correction mis-orders them); ASO's Bonferroni uses 1 − (1 − CL)/k.

ASO integrates the violation ratio exactly over the piecewise-constant empirical quantile
functions instead of deepsig's grid of step ``dt`` (which also drops its first grid point):
e.g. VR([1,4], [2,3]) = 0.5 exactly where deepsig gives 0.497487.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Any, Literal, Mapping, Sequence

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import gammaln

from seedscope.api import json_ready
from seedscope.errors import SeedscopeError
from seedscope.metrics.bootstrap import bootstrap_mean_ci, check_confidence, check_resamples

#: with fewer discordant pairs than this McNemar uses the exact binomial test
MCNEMAR_EXACT_BELOW = 25
#: values materialised per chunk of a resampling
CHUNK_VALUES = 20_000_000


def _vector(values, what: str, minimum: int = 1) -> np.ndarray:
    array = np.asarray(values, dtype=float).ravel()
    if len(array) < minimum:
        raise SeedscopeError(f"{what} needs at least {minimum} value(s), got {len(array)}")
    if not np.isfinite(array).all():
        raise SeedscopeError(f"{what} contains a NaN or infinite value")
    return array


# --------------------------------------------------------------------------- aggregates (rliable)


def interquartile_mean(scores) -> float:
    """IQM: mean of the middle 50 % of all scores (runs × tasks flattened), cutting floor(0.25·n) per end."""
    values = _vector(scores, "the interquartile mean")
    return float(stats.trim_mean(values, 0.25))


def probability_of_improvement(x, y) -> float:
    """P(X > Y) + ½ P(X = Y) over all run pairs, per task, averaged over tasks (rliable).

    ``x``: runs × tasks of system X (a 1-D array is one task); ``y`` likewise (its runs may differ).
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    x = x[:, None] if x.ndim == 1 else x
    y = y[:, None] if y.ndim == 1 else y
    if x.shape[1] != y.shape[1]:
        raise SeedscopeError(f"probability of improvement needs the same tasks: {x.shape[1]} vs {y.shape[1]}")
    _vector(x, "probability of improvement (X)")
    _vector(y, "probability of improvement (Y)")
    greater = (x[:, None, :] > y[None, :, :]).mean(axis=(0, 1))
    equal = (x[:, None, :] == y[None, :, :]).mean(axis=(0, 1))
    return float((greater + 0.5 * equal).mean())


# --------------------------------------------------------------------------- almost stochastic order


def _quantile_steps(n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Intervals of (0, 1] on which both empirical quantile functions are constant.

    The quantile function of n sorted scores is x_(ceil(n·t)) (lower inverse CDF); its steps
    sit at multiples of 1/n. On the common grid of denominator n·m the interval starting at
    edge e uses index e // m for the first sample and e // n for the second.
    """
    edges = np.union1d(np.arange(0, n * m + 1, m), np.arange(0, n * m + 1, n))
    widths = np.diff(edges) / (n * m)
    return widths, edges[:-1] // m, edges[:-1] // n


def _violation_ratios(sorted_a: np.ndarray, sorted_b: np.ndarray) -> np.ndarray:
    """ε_W for rows of sorted samples (… × n, … × m); 0.5 where the distributions coincide."""
    widths, index_a, index_b = _quantile_steps(sorted_a.shape[-1], sorted_b.shape[-1])
    gap = sorted_b[..., index_b] - sorted_a[..., index_a]  # G⁻¹(t) − F⁻¹(t)
    squared = widths * gap**2
    total = squared.sum(axis=-1)
    violation = np.where(gap > 0, squared, 0.0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total == 0, 0.5, violation / np.where(total == 0, 1, total))


def violation_ratio(scores_a, scores_b) -> float:
    """ε_W(A, B): share of the squared Wasserstein-2 distance where A's quantiles fall below B's.

    0 means A stochastically dominates B; 1 means B dominates A; 0.5 when identical. Integrated
    exactly (see the module docstring).
    """
    a = np.sort(_vector(scores_a, "ASO (scores A)"))
    b = np.sort(_vector(scores_b, "ASO (scores B)"))
    return float(_violation_ratios(a, b))


@dataclass(frozen=True)
class ASOResult:
    """ε_min: an upper confidence bound on the violation ratio; A is almost stochastically
    better than B when ε_min < threshold (0.5 per Dror et al.; 0.2 is stricter, Ulmer et al.)."""

    violation_ratio: float
    eps_min: float
    sigma: float
    confidence: float
    n_comparisons: int

    def a_better(self, threshold: float = 0.5) -> bool:
        return self.eps_min < threshold


def aso(
    scores_a,
    scores_b,
    *,
    confidence: float = 0.95,
    n_comparisons: int = 1,
    n_boot: int = 10_000,
    seed: int = 0,
) -> ASOResult:
    """Almost stochastic order (Dror et al. 2019; deepsig's estimator, Ulmer et al. 2022).

    σ̂ is the std of √(nm/(n+m))·(ε* − ε) over ``n_boot`` bootstrap resamples of both score
    lists; ε_min = clip(ε − σ̂/√(nm/(n+m)) · Φ⁻¹(1 − CL′), 0, 1) with the Bonferroni-corrected
    CL′ = 1 − (1 − CL)/k for k comparisons.
    """
    check_confidence(confidence)
    check_resamples(n_boot)
    if n_comparisons < 1:
        raise SeedscopeError(f"the number of comparisons must be at least 1, not {n_comparisons}")
    a = np.sort(_vector(scores_a, "ASO (scores A)"))
    b = np.sort(_vector(scores_b, "ASO (scores B)"))
    n, m = len(a), len(b)
    ratio = float(_violation_ratios(a, b))
    rng = np.random.default_rng(seed)
    boot_a = np.sort(a[rng.integers(0, n, size=(n_boot, n))], axis=1)
    boot_b = np.sort(b[rng.integers(0, m, size=(n_boot, m))], axis=1)
    samples = _violation_ratios(boot_a, boot_b)
    scale = math.sqrt(n * m / (n + m))
    sigma = float(np.std(scale * (samples - ratio)))
    level = 1 - (1 - confidence) / n_comparisons
    eps_min = float(np.clip(ratio - sigma / scale * stats.norm.ppf(1 - level), 0.0, 1.0))
    return ASOResult(ratio, eps_min, sigma, level, n_comparisons)


# --------------------------------------------------------------------------- tests


def mcnemar(correct_a, correct_b, *, exact: bool | None = None) -> dict[str, Any]:
    """McNemar's test on paired per-example correctness of two systems (one seed each).

    b = A right & B wrong, c = A wrong & B right. ``exact=None`` uses the exact binomial test
    when b + c < 25, else the χ² statistic (b − c)²/(b + c) without continuity correction.
    No discordant pair: statistic 0, p = 1 (never a division by zero).
    """
    a = np.asarray(correct_a, dtype=bool)
    b_arr = np.asarray(correct_b, dtype=bool)
    if a.shape != b_arr.shape:
        raise SeedscopeError(f"McNemar needs the same examples for both systems: {a.shape} vs {b_arr.shape}")
    b = int((a & ~b_arr).sum())
    c = int((~a & b_arr).sum())
    discordant = b + c
    if discordant == 0:
        return {"b": b, "c": c, "statistic": 0.0, "p_value": 1.0, "method": "no discordant pairs"}
    statistic = (b - c) ** 2 / discordant
    use_exact = discordant < MCNEMAR_EXACT_BELOW if exact is None else exact
    if use_exact:
        p_value = float(stats.binomtest(min(b, c), discordant, 0.5).pvalue)
        return {"b": b, "c": c, "statistic": float(statistic), "p_value": p_value, "method": "exact binomial"}
    p_value = float(stats.chi2.sf(statistic, 1))
    return {"b": b, "c": c, "statistic": float(statistic), "p_value": p_value, "method": "chi-square"}


def paired_permutation_test(scores_a, scores_b, *, n_resamples: int = 9999, seed: int = 0) -> float:
    """Two-sided p-value of the mean difference on matched seeds (random sign flips of A − B).

    scipy.stats.permutation_test; exact over all 2^S sign patterns when 2^S ≤ ``n_resamples``.
    """
    a = _vector(scores_a, "the paired permutation test (A)", 2)
    b = _vector(scores_b, "the paired permutation test (B)", 2)
    if len(a) != len(b):
        raise SeedscopeError(f"the paired permutation test needs matched seeds: {len(a)} vs {len(b)} values")
    check_resamples(n_resamples)
    result = stats.permutation_test(
        (a - b,),
        lambda d, axis: d.mean(axis=axis),
        permutation_type="samples",
        vectorized=True,
        n_resamples=n_resamples,
        alternative="two-sided",
        rng=np.random.default_rng(seed),
    )
    return float(result.pvalue)


# --------------------------------------------------------------------------- multiple comparisons


def bonferroni(p_values) -> np.ndarray:
    """min(1, m·p) for each of m p-values (input order kept)."""
    p = _p_values(p_values)
    return np.minimum(1.0, len(p) * p)


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values, in input order.

    Sorted ascending, p_(i) is multiplied by (m − i + 1); a running maximum keeps the adjusted
    values monotone, so "adjusted p ≤ α" gives exactly the rejections of the sequential procedure.
    """
    p = _p_values(p_values)
    order = np.argsort(p, kind="stable")
    stepped = np.minimum(1.0, (len(p) - np.arange(len(p))) * p[order])
    adjusted = np.empty_like(p)
    adjusted[order] = np.maximum.accumulate(stepped)
    return adjusted


def adjust_p_values(p_values, method: Literal["holm", "bonferroni", "bh"] = "holm") -> np.ndarray:
    """Family-wise (holm, bonferroni) or false-discovery-rate (bh: Benjamini–Hochberg) adjustment."""
    if method == "holm":
        return holm(p_values)
    if method == "bonferroni":
        return bonferroni(p_values)
    if method == "bh":
        return stats.false_discovery_control(_p_values(p_values), method="bh")
    raise SeedscopeError(f"unknown p-value adjustment '{method}': use holm, bonferroni or bh")


def _p_values(p_values) -> np.ndarray:
    p = np.asarray(p_values, dtype=float).ravel()
    if len(p) and (np.isnan(p).any() or (p < 0).any() or (p > 1).any()):
        raise SeedscopeError("p-values must lie in [0, 1]")
    return p


# --------------------------------------------------------------------------- bootstraps over seeds


def mean_difference_ci(
    scores_a, scores_b, *, paired: bool, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> dict[str, float]:
    """Mean A − mean B with a percentile bootstrap CI over seeds.

    ``paired``: the two lists are matched seeds (same run names, same order) and one resample
    of seed indices serves both; otherwise A's and B's seeds are resampled independently.
    """
    a = _vector(scores_a, "the mean difference (A)")
    b = _vector(scores_b, "the mean difference (B)")
    alpha = check_confidence(confidence)
    check_resamples(n_boot)
    if paired:
        if len(a) != len(b):
            raise SeedscopeError(f"a paired comparison needs matched seeds: {len(a)} vs {len(b)} values")
        low, high = bootstrap_mean_ci(a - b, n_boot=n_boot, confidence=confidence, seed=seed)
        low, high = float(low[0]), float(high[0])
    else:
        rng = np.random.default_rng(seed)
        means_a = a[rng.integers(0, len(a), size=(n_boot, len(a)))].mean(axis=1)
        means_b = b[rng.integers(0, len(b), size=(n_boot, len(b)))].mean(axis=1)
        low, high = (float(v) for v in np.quantile(means_a - means_b, [alpha, 1 - alpha]))
    return {"delta": float(a.mean() - b.mean()), "ci_low": low, "ci_high": high}


def _resample_counts(rng: np.random.Generator, n_rows: int, size: int) -> np.ndarray:
    """How often each of ``size`` items is drawn in each of ``n_rows`` resamples with replacement."""
    draws = rng.integers(0, size, size=(n_rows, size)) + size * np.arange(n_rows)[:, None]
    return np.bincount(draws.ravel(), minlength=n_rows * size).reshape(n_rows, size).astype(float)


@dataclass(frozen=True)
class JointBootstrap:
    """Seed × example bootstrap of two systems (MultiBERTs' multibootstrap, vectorised).

    ``mean_*``: averages over the bootstrap replicates; ``delta`` = θ_A − θ_B; ``p_value``:
    two-sided, 2·min(share ≤ 0, share ≥ 0) with a +1 correction, never 0; ``p_not_better``:
    one-sided, (1 + #{Δ* ≤ 0}) / (1 + B) for H0 "A is not better than B".
    """

    mean_a: float
    ci_a: tuple[float, float]
    mean_b: float
    ci_b: tuple[float, float]
    delta: float
    ci_delta: tuple[float, float]
    p_value: float
    p_not_better: float
    paired_seeds: bool


def joint_bootstrap(
    scores_a,
    scores_b,
    *,
    paired_seeds: bool,
    resample: Literal["both", "seeds", "examples", "none"] = "both",
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> JointBootstrap:
    """Resample seeds and examples together: θ = mean over the drawn seeds and examples.

    ``scores_a``: S_A × N per-example scores (e.g. correctness 0/1) on the same N examples as
    ``scores_b`` (S_B × N). Examples are always resampled jointly for A and B (same test
    items); ``paired_seeds`` also draws the same seed indices for both (matched seeds, S_A = S_B).
    ``resample`` = seeds / examples resamples only that axis; none gives every replicate the
    point estimate (a sanity check: degenerate intervals).
    """
    a = np.asarray(scores_a, dtype=float)
    b = np.asarray(scores_b, dtype=float)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1]:
        raise SeedscopeError(f"the joint bootstrap needs seeds × examples arrays on the same examples: {a.shape} vs {b.shape}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise SeedscopeError("the joint bootstrap got a NaN or infinite per-example score")
    if paired_seeds and a.shape[0] != b.shape[0]:
        raise SeedscopeError(f"paired seeds need the same number of seeds: {a.shape[0]} vs {b.shape[0]}")
    if resample not in ("both", "seeds", "examples", "none"):
        raise SeedscopeError(f"unknown resampling '{resample}': use both, seeds, examples or none")
    alpha = check_confidence(confidence)
    check_resamples(n_boot)
    rng = np.random.default_rng(seed)
    n_examples = a.shape[1]
    chunk = max(1, CHUNK_VALUES // max(1, n_examples))
    theta_a, theta_b = np.empty(n_boot), np.empty(n_boot)
    for start in range(0, n_boot, chunk):
        rows = min(chunk, n_boot - start)
        seeds_on = resample in ("both", "seeds")
        weight_a = _resample_counts(rng, rows, a.shape[0]) if seeds_on else np.ones((rows, a.shape[0]))
        if not seeds_on:
            weight_b = np.ones((rows, b.shape[0]))
        else:
            weight_b = weight_a if paired_seeds else _resample_counts(rng, rows, b.shape[0])
        examples = _resample_counts(rng, rows, n_examples) if resample in ("both", "examples") else np.ones((rows, n_examples))
        theta_a[start : start + rows] = ((weight_a @ a) * examples).sum(axis=1) / (a.shape[0] * n_examples)
        theta_b[start : start + rows] = ((weight_b @ b) * examples).sum(axis=1) / (b.shape[0] * n_examples)
    delta = theta_a - theta_b
    quantiles = lambda v: tuple(float(q) for q in np.quantile(v, [alpha, 1 - alpha]))  # noqa: E731
    below, above = int((delta <= 0).sum()), int((delta >= 0).sum())
    return JointBootstrap(
        mean_a=float(theta_a.mean()),
        ci_a=quantiles(theta_a),
        mean_b=float(theta_b.mean()),
        ci_b=quantiles(theta_b),
        delta=float(delta.mean()),
        ci_delta=quantiles(delta),
        p_value=float(min(1.0, 2 * (1 + min(below, above)) / (1 + n_boot))),
        p_not_better=float((1 + below) / (1 + n_boot)),
        paired_seeds=paired_seeds,
    )


# --------------------------------------------------------------------------- expected max, seeds needed


def expected_max_performance(scores, n_max: int | None = None, *, replace: bool = True) -> pd.DataFrame:
    """Expected best validation score of n runs, n = 1 … n_max (Dodge et al. 2019), exact.

    With replacement (the paper's formula over the empirical CDF F of the N scores):
    E[max_n] = Σ_i v_(i) [(i/N)^n − ((i−1)/N)^n], and ``std`` its spread. Without replacement
    (n ≤ N): P(max = v_(i)) = C(i−1, n−1)/C(N, n).
    """
    values = np.sort(_vector(scores, "expected maximum performance"))
    count = len(values)
    n_max = count if n_max is None else int(n_max)
    if n_max < 1 or (not replace and n_max > count):
        raise SeedscopeError(f"the number of runs must lie between 1 and {count if not replace else 'any'}, not {n_max}")
    ranks = np.arange(1, count + 1)
    rows = []
    for n in range(1, n_max + 1):
        if replace:
            weights = (ranks / count) ** n - ((ranks - 1) / count) ** n
        else:
            log_weights = _log_comb(ranks - 1, n - 1) - _log_comb(count, n)
            weights = np.where(ranks >= n, np.exp(log_weights), 0.0)
        mean = float(weights @ values)
        spread = math.sqrt(max(0.0, float(weights @ values**2) - mean**2))
        rows.append({"n_runs": n, "expected_max": mean, "std": spread})
    return pd.DataFrame(rows).set_index("n_runs")


def _log_comb(n, k) -> np.ndarray:
    n, k = np.asarray(n, dtype=float), np.asarray(k, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.where(k <= n, gammaln(n + 1) - gammaln(k + 1) - gammaln(np.maximum(n - k, 0) + 1), -np.inf)


def seeds_needed(
    scores,
    sizes: Sequence[int] | None = None,
    *,
    n_boot: int = 2000,
    confidence: float = 0.95,
    seed: int = 0,
) -> pd.DataFrame:
    """How the uncertainty of the mean and of VAR shrinks with the number of seeds S.

    For each size s, ``n_boot`` sets of s seeds are drawn with replacement from the observed
    per-seed scores; the central ``confidence`` range of their mean and of their VAR
    (population std, the published form) is reported with its width. Sizes may exceed the
    observed count (a projection from the observed distribution).
    """
    values = _vector(scores, "the seeds-needed curve", 2)
    alpha = check_confidence(confidence)
    check_resamples(n_boot)
    if sizes is None:
        sizes = np.unique(np.round(np.geomspace(2, max(10, 4 * len(values)), 8)).astype(int))
    rows = []
    for size in sizes:
        if int(size) < 2:
            raise SeedscopeError(f"a seeds-needed size must be at least 2, not {size}")
        rng = np.random.default_rng([seed, int(size)])
        drawn = values[rng.integers(0, len(values), size=(n_boot, int(size)))]
        means, spreads = drawn.mean(axis=1), drawn.std(axis=1)
        (m_low, m_high), (v_low, v_high) = np.quantile(means, [alpha, 1 - alpha]), np.quantile(spreads, [alpha, 1 - alpha])
        rows.append(
            {
                "n_seeds": int(size),
                "mean_ci_low": float(m_low),
                "mean_ci_high": float(m_high),
                "mean_ci_width": float(m_high - m_low),
                "var_ci_low": float(v_low),
                "var_ci_high": float(v_high),
                "var_ci_width": float(v_high - v_low),
            }
        )
    return pd.DataFrame(rows).set_index("n_seeds")


# --------------------------------------------------------------------------- comparing systems


@dataclass
class Comparison:
    """Seed-level comparison of several systems on one metric.

    ``systems``: per system n_runs, mean, std (sample), IQM, median, min, max and a bootstrap
    CI of the mean. ``pairs``: per ordered pair (A, B) with A listed first: mean difference
    A − B with its bootstrap CI over seeds (paired when the run names match), P(A > B), ASO
    ε_min both ways, the paired permutation p-value on matched seeds and, when per-example
    scores exist, the joint seed × example bootstrap; p-values also Holm- and
    Bonferroni-adjusted over the pairs. ``mcnemar``: per pair and matched seed. ``expected_max``:
    expected best score of n runs per system. ``seeds_needed``: CI widths of mean and VAR by S.
    """

    metric: str
    systems: pd.DataFrame
    pairs: pd.DataFrame
    mcnemar: pd.DataFrame
    expected_max: pd.DataFrame
    seeds_needed: pd.DataFrame
    per_run: dict[str, pd.Series]
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``seedscope compare`` (schema in docs/subsets.md)."""
        systems = {}
        for name, row in self.systems.iterrows():
            entry = {key: json_ready(value) for key, value in row.items()}
            entry["scores"] = {str(run): json_ready(v) for run, v in self.per_run[name].items()}
            entry["expected_max"] = [json_ready(v) for v in self.expected_max[name].dropna()]
            needed = self.seeds_needed[self.seeds_needed["system"] == name].drop(columns="system")
            entry["seeds_needed"] = [{k: json_ready(v) for k, v in r.items()} for r in needed.to_dict(orient="records")]
            systems[name] = entry
        pairs = []
        for (a, b), row in self.pairs.iterrows():
            entry = {"system_a": a, "system_b": b, **{key: json_ready(value) for key, value in row.items()}}
            tests = self.mcnemar[(self.mcnemar["system_a"] == a) & (self.mcnemar["system_b"] == b)]
            entry["mcnemar"] = [{k: json_ready(v) for k, v in r.items() if k not in ("system_a", "system_b")} for r in tests.to_dict(orient="records")]
            pairs.append(entry)
        return {
            "metric": self.metric,
            "systems": systems,
            "pairs": pairs,
            "settings": {k: json_ready(v) for k, v in self.settings.items()},
            "notes": list(self.notes),
        }


def compare_systems(
    per_run: Mapping[str, pd.Series],
    per_example: Mapping[str, pd.DataFrame] | None = None,
    *,
    metric: str = "score",
    n_boot: int = 10_000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
    aso_threshold: float = 0.5,
) -> Comparison:
    """Compare systems seed by seed.

    ``per_run``: system → per-run metric values (index = run name; equal names across systems
    are matched seeds). ``per_example``: optional system → runs × examples scores (e.g. 0/1
    correctness, columns = example ids) for the joint bootstrap and McNemar. Every resampling
    uses ``seed``.
    """
    names = list(per_run)
    if len(names) < 2:
        raise SeedscopeError(f"a comparison needs at least two systems, got {len(names)}")
    series = {}
    for name in names:
        values = pd.Series(per_run[name], dtype=float)
        values.index = values.index.astype(str)
        _vector(values, f"system {name}", 2)
        series[name] = values
    alpha = check_confidence(confidence)
    notes: list[str] = []
    system_rows = []
    for name in names:
        values = series[name].to_numpy()
        low, high = bootstrap_mean_ci(values, n_boot=n_boot, confidence=confidence, seed=seed)
        system_rows.append(
            {
                "n_runs": len(values),
                "mean": values.mean(),
                "std": values.std(ddof=1),
                "iqm": interquartile_mean(values),
                "median": float(np.median(values)),
                "min": values.min(),
                "max": values.max(),
                "ci_low": float(low[0]),
                "ci_high": float(high[0]),
            }
        )
    systems = pd.DataFrame(system_rows, index=pd.Index(names, name="system"))

    pairs = list(itertools.combinations(names, 2))
    pair_rows, mcnemar_rows = [], []
    for a, b in pairs:
        matched = [run for run in series[a].index if run in set(series[b].index)]
        paired = len(matched) == len(series[a]) == len(series[b])
        values_a = series[a].loc[matched].to_numpy() if paired else series[a].to_numpy()
        values_b = series[b].loc[matched].to_numpy() if paired else series[b].to_numpy()
        row = {"n_matched": len(matched), "paired": paired}
        row.update(mean_difference_ci(values_a, values_b, paired=paired, n_boot=n_boot, confidence=confidence, seed=seed))
        row["prob_improvement"] = probability_of_improvement(series[a].to_numpy(), series[b].to_numpy())
        forward = aso(series[a], series[b], confidence=confidence, n_comparisons=len(pairs), n_boot=n_boot, seed=seed)
        backward = aso(series[b], series[a], confidence=confidence, n_comparisons=len(pairs), n_boot=n_boot, seed=seed)
        row.update(
            violation_ratio=forward.violation_ratio,
            aso_eps_min=forward.eps_min,
            aso_eps_min_reverse=backward.eps_min,
            aso_verdict=_aso_verdict(forward.eps_min, backward.eps_min, aso_threshold, a, b),
        )
        if len(matched) >= 2:
            row["p_permutation"] = paired_permutation_test(
                series[a].loc[matched], series[b].loc[matched], n_resamples=n_permutations, seed=seed
            )
        else:
            row["p_permutation"] = np.nan
            notes.append(f"{a} vs {b}: fewer than 2 matched seeds (same run names), so no paired permutation test")
        row.update(_joint(per_example, a, b, matched, paired, n_boot, confidence, seed, notes))
        if per_example is not None and a in per_example and b in per_example:
            mcnemar_rows += _mcnemar_rows(per_example[a], per_example[b], matched, a, b)
        pair_rows.append({"system_a": a, "system_b": b, **row})
    pair_frame = pd.DataFrame(pair_rows).set_index(["system_a", "system_b"])
    for column in ("p_permutation", "p_joint"):
        if column in pair_frame:
            present = pair_frame[column].notna()
            for method in ("holm", "bonferroni"):
                adjusted = np.full(len(pair_frame), np.nan)
                adjusted[present.to_numpy()] = adjust_p_values(pair_frame.loc[present, column], method)
                pair_frame[f"{column}_{method}"] = adjusted
    mcnemar_frame = pd.DataFrame(
        mcnemar_rows, columns=["system_a", "system_b", "run", "b", "c", "statistic", "p_value", "method"]
    )
    if len(mcnemar_frame):
        mcnemar_frame["p_holm"] = mcnemar_frame.groupby(["system_a", "system_b"])["p_value"].transform(holm)
    expected = pd.concat(
        {name: expected_max_performance(series[name])["expected_max"] for name in names}, axis=1
    )
    needed = pd.concat(
        [seeds_needed(series[name], n_boot=n_boot, confidence=confidence, seed=seed).reset_index().assign(system=name)
         for name in names],
        ignore_index=True,
    )
    needed = needed[["system"] + [c for c in needed.columns if c != "system"]]
    settings = {"n_boot": n_boot, "n_permutations": n_permutations, "confidence": confidence, "seed": seed,
                "aso_threshold": aso_threshold, "alpha": 2 * alpha}
    return Comparison(metric, systems, pair_frame, mcnemar_frame, expected, needed, series, settings, notes)


def _aso_verdict(forward: float, backward: float, threshold: float, a: str, b: str) -> str:
    if forward < threshold:
        return f"{a} almost stochastically dominates {b}"
    if backward < threshold:
        return f"{b} almost stochastically dominates {a}"
    return "no almost stochastic order"


def _joint(per_example, a, b, matched, paired, n_boot, confidence, seed, notes) -> dict[str, float]:
    empty = {"joint_delta": np.nan, "joint_ci_low": np.nan, "joint_ci_high": np.nan, "p_joint": np.nan}
    if per_example is None or a not in per_example or b not in per_example:
        return empty
    frame_a, frame_b = per_example[a], per_example[b]
    if list(frame_a.columns) != list(frame_b.columns):
        notes.append(f"{a} vs {b}: evaluated on different example ids, so no joint bootstrap or McNemar test")
        return empty
    if paired:
        frame_a, frame_b = frame_a.loc[matched], frame_b.loc[matched]
    result = joint_bootstrap(
        frame_a.to_numpy(dtype=float), frame_b.to_numpy(dtype=float), paired_seeds=paired,
        n_boot=n_boot, confidence=confidence, seed=seed,
    )
    return {"joint_delta": result.delta, "joint_ci_low": result.ci_delta[0], "joint_ci_high": result.ci_delta[1],
            "p_joint": result.p_value}


def _mcnemar_rows(frame_a: pd.DataFrame, frame_b: pd.DataFrame, matched: list[str], a: str, b: str) -> list[dict]:
    if list(frame_a.columns) != list(frame_b.columns):
        return []
    return [
        {"system_a": a, "system_b": b, "run": run, **mcnemar(frame_a.loc[run].to_numpy() > 0, frame_b.loc[run].to_numpy() > 0)}
        for run in matched
        if run in frame_a.index and run in frame_b.index
    ]


def compare_sweeps(
    tables: Mapping[str, pd.DataFrame],
    *,
    metric: str | None = None,
    n_boot: int = 10_000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
) -> Comparison:
    """Compare sweeps given as prediction tables (system name → long table of its S runs).

    Per-run metrics come from :func:`seedscope.analyze` (``metric`` defaults to the primary
    metric: accuracy for classification, Pearson for regression); classification with gold
    labels also gives per-example correctness for the joint bootstrap and McNemar.
    """
    from seedscope.api import analyze

    check_confidence(confidence)  # a setting, not a fault of the first sweep analysed below
    check_resamples(n_boot)
    per_run, per_example, notes = {}, {}, []
    chosen = metric
    for name, table in tables.items():
        try:  # only per_run and the aligned arrays are used here, so analyze's own CI stays small
            result = analyze(table, n_boot=max(1, min(n_boot, 1000)), confidence=confidence, seed=seed)
        except SeedscopeError as error:
            raise SeedscopeError(f"sweep {name}: {error}") from None
        if result.per_run.shape[1] == 0:
            raise SeedscopeError(f"sweep {name} has no gold labels, so it has no per-run metric to compare")
        chosen = chosen or result.primary_metric
        if chosen not in result.per_run.columns:
            raise SeedscopeError(
                f"sweep {name} has no metric {chosen!r}; available: {', '.join(result.per_run.columns)}"
            )
        undefined = result.per_run.index[result.per_run[chosen].isna()]
        if len(undefined):
            raise SeedscopeError(
                f"sweep {name}: {chosen} is undefined for run(s) {', '.join(map(str, undefined[:5]))} "
                "(e.g. constant predictions have no correlation); pick another --metric or drop those runs"
            )
        per_run[name] = result.per_run[chosen]
        aligned = result.aligned
        if aligned.task_type == "classification" and aligned.has_labels and (aligned.labels >= 0).all():
            correct = (aligned.predictions == aligned.labels[None, :]).astype(float)
            per_example[name] = pd.DataFrame(correct, index=aligned.runs, columns=aligned.example_ids)
    if len(per_example) < len(per_run) and per_example:
        notes.append("some sweeps lack per-example correctness (regression or missing labels): no joint bootstrap / McNemar for them")
    comparison = compare_systems(
        per_run,
        per_example or None,
        metric=chosen,
        n_boot=n_boot,
        n_permutations=n_permutations,
        confidence=confidence,
        seed=seed,
    )
    comparison.notes = notes + comparison.notes
    return comparison
