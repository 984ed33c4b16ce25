"""Randomness-factor importance with interactions (``../shared/reference/factor-importance.md``).

For an investigated factor F the scores form an M × N grid: row j is one mitigation run (one
fixed configuration of every other factor), column k one investigation configuration of F.
From it come the partial means p̄_j and partial stds p_j, the contributed std c = mean_j p_j
(the spread F causes, interactions averaged out), the mitigated std m = std_j p̄_j (the spread
the other factors still cause) and the importance IS = (c − m) / σ_GM, normalised by the std
of the golden model (every factor varying). Every std is the population form (divisor n).

Missing runs are NaN cells of the grid: each group's statistics use the runs present and the
counts are reported; a group with fewer than two runs is refused unless the caller allows it
(it is then skipped and counted), and a grid with missing runs at all is refused unless the
caller allows missing runs — never silently.
Everything is vectorised over groups and bootstrap resamples, so ten factors × 1,000 runs
with a 10,000-resample interval take well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import numpy as np
import pandas as pd

from seedscope.serialize import json_ready
from seedscope.errors import SeedscopeError
from seedscope.metrics.resampling import interval

IMPORTANT_SHARE = 0.5
"""Random and Fixed baselines call a factor important when its std reaches 50% of σ_GM."""


@dataclass(frozen=True)
class FactorGrid:
    """The scores of one factor's investigation: ``scores[j, k]`` is run (mitigation j, investigation k).

    NaN marks a missing run. ``groups`` labels the M mitigation runs, ``configs`` the N
    investigation configurations. Rows are in the order convergence curves add them (an
    imported table sorts them by group key: the mitigation index for a run directory).
    """

    factor: str
    scores: np.ndarray
    groups: tuple = ()
    configs: tuple = ()

    def __post_init__(self) -> None:
        scores = np.asarray(self.scores, dtype=float)
        if scores.ndim != 2:
            raise SeedscopeError(
                f"factor {self.factor!r}: the score grid must be 2-D (mitigation runs × investigation runs)"
            )
        object.__setattr__(self, "scores", scores)
        if not self.groups:
            object.__setattr__(self, "groups", tuple(range(1, scores.shape[0] + 1)))
        if not self.configs:
            object.__setattr__(self, "configs", tuple(range(1, scores.shape[1] + 1)))
        if len(self.groups) != scores.shape[0] or len(self.configs) != scores.shape[1]:
            raise SeedscopeError(
                f"factor {self.factor!r}: {len(self.groups)} group labels and {len(self.configs)} "
                f"configuration labels do not match a {scores.shape[0]} × {scores.shape[1]} grid"
            )


@dataclass(frozen=True)
class FactorStudy:
    """All factors of one study plus the golden-model runs they share.

    Parameters
    ----------
    grids : dict
        Factor → its investigation × mitigation grid of scores.
    golden : numpy.ndarray
        The golden-model runs' scores.
    metric : str, default "score"
    chance : float, optional
        A chance-level run's score (1/K for accuracy or macro-F1 with K classes, 0 for MCC): runs
        below it are counted as failed; None leaves failures uncounted.

    Returns
    -------
    FactorStudy

    Examples
    --------
    >>> import numpy as np, seedscope
    >>> seedscope.FactorStudy(grids={}, golden=np.array([0.80, 0.82]), chance=0.5).chance
    0.5
    """

    grids: dict[str, FactorGrid]
    golden: np.ndarray
    metric: str = "score"
    chance: float | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "golden", np.asarray(self.golden, dtype=float).ravel())


@dataclass(frozen=True)
class GroupStats:
    """Per-mitigation-run statistics of one grid, over the runs present."""

    partial_mean: np.ndarray
    partial_std: np.ndarray
    counts: np.ndarray
    kept: np.ndarray  # boolean mask of groups with at least ``min_group_runs`` runs


def _group_name(labels: tuple, j: int) -> str:
    label = labels[j] if j < len(labels) else None
    if isinstance(label, dict) and label:
        return "group " + ", ".join(f"{k}={v}" for k, v in label.items())
    return f"mitigation run {j + 1}" if label is None or label == {} else f"mitigation run {label}"


def group_stats(
    scores: np.ndarray, *, factor: str = "", labels: tuple = (), allow_missing: bool = False,
    allow_small_groups: bool = False, min_group_runs: int = 2,
) -> GroupStats:
    """Partial means and stds (population) per row of ``scores``, refusing what the spec refuses."""
    present = ~np.isnan(scores)
    counts = present.sum(axis=1)
    if not allow_missing and not present.all():
        j, k = np.argwhere(~present)[0]
        raise SeedscopeError(
            f"factor {factor!r} has {int((~present).sum())} missing run(s) (first: {_group_name(labels, j)}, "
            f"investigation run {k + 1}); allow missing runs to compute each group over the runs present"
        )
    kept = counts >= min_group_runs
    if not kept.all() and not allow_small_groups:
        j = int(np.argmin(kept))
        raise SeedscopeError(
            f"factor {factor!r}: {_group_name(labels, j)} has {int(counts[j])} run(s), fewer than "
            f"{min_group_runs}; allow small groups to skip such groups (they are then counted)"
        )
    filled = np.where(present, scores, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = filled.sum(axis=1) / counts
        dev = np.where(present, scores - mean[:, None], 0.0)
        std = np.sqrt((dev**2).sum(axis=1) / counts)
    return GroupStats(mean, std, counts, kept)


def importance_from_groups(
    partial_mean: np.ndarray, partial_std: np.ndarray, golden_std: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """c, m and IS over the last axis (so a batch of resamples is one call)."""
    c = partial_std.mean(axis=-1)
    m = partial_mean.std(axis=-1)
    return c, m, (c - m) / golden_std


def bootstrap_importance(
    partial_mean: np.ndarray, partial_std: np.ndarray, golden_std: float, *, n_boot: int = 10_000,
    confidence: float = 0.95, seed: int = 0,
) -> tuple[float, float]:
    """Percentile interval of IS, resampling mitigation runs with replacement (σ_GM held fixed)."""
    low, high = interval(lambda drawn: importance_from_groups(*drawn, golden_std)[2], (partial_mean, partial_std),
                         n_resamples=n_boot, confidence=confidence, seed=seed)
    return float(low), float(high)


def prefix_importance(
    partial_mean: np.ndarray, partial_std: np.ndarray, golden_std: float, sizes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """c, m and IS of the first ``sizes`` mitigation runs, for any leading batch axes.

    Cumulative sums over the last axis of centred values give every prefix in one pass.
    """
    centred = partial_mean - partial_mean.mean(axis=-1, keepdims=True)
    n = np.asarray(sizes)
    c = np.cumsum(partial_std, axis=-1)[..., n - 1] / n
    first = np.cumsum(centred, axis=-1)[..., n - 1] / n
    second = np.cumsum(centred**2, axis=-1)[..., n - 1] / n
    m = np.sqrt(np.clip(second - first**2, 0.0, None))
    return c, m, (c - m) / golden_std


def convergence_curve(
    grid: FactorGrid, golden_std: float, *, allow_missing: bool = False, allow_small_groups: bool = False
) -> pd.DataFrame:
    """c, m and IS as mitigation runs (axis ``M``) and investigation runs (axis ``N``) are added in grid order."""
    stats = group_stats(grid.scores, factor=grid.factor, labels=grid.groups, allow_missing=allow_missing,
                        allow_small_groups=allow_small_groups)
    mean, std = stats.partial_mean[stats.kept], stats.partial_std[stats.kept]
    sizes = np.arange(2, len(mean) + 1)
    c, m, score = prefix_importance(mean, std, golden_std, sizes)
    rows = [pd.DataFrame({"axis": "M", "size": sizes, "c_std": c, "m_std": m, "importance": score})]
    by_n = []
    for n in range(2, grid.scores.shape[1] + 1):
        part = group_stats(grid.scores[:, :n], factor=grid.factor, allow_missing=True, allow_small_groups=True)
        keep = part.kept & stats.kept
        c_n, m_n, is_n = importance_from_groups(part.partial_mean[keep], part.partial_std[keep], golden_std)
        by_n.append((n, c_n, m_n, is_n))
    if by_n:
        rows.append(pd.DataFrame(by_n, columns=["size", "c_std", "m_std", "importance"]).assign(axis="N"))
    return pd.concat(rows, ignore_index=True)[["axis", "size", "c_std", "m_std", "importance"]]


def _std_quantiles(values: np.ndarray, prefix: str) -> dict[str, float]:
    q = np.quantile(values, [0.0, 0.25, 0.5, 0.75, 1.0])
    return {f"{prefix}_{name}": float(v) for name, v in zip(("min", "q25", "median", "q75", "max"), q)}


def baselines(partial_std: np.ndarray, golden: np.ndarray, n_configs: int) -> dict[str, float]:
    """The Random and Fixed strategies with the 50%-of-golden rule, from the same runs.

    Random: disjoint consecutive slices of ``n_configs`` golden runs (everything varies);
    Fixed: the partial std of each single mitigation run (its distribution over j).
    """
    golden_std = float(golden.std())
    threshold = IMPORTANT_SHARE * golden_std
    size = min(n_configs, len(golden))
    slices = golden[: len(golden) // size * size].reshape(-1, size).std(axis=1)
    return {
        "threshold": threshold,
        "random_std": float(slices.mean()),
        "random_slices": int(len(slices)),
        "random_important": bool(slices.mean() >= threshold),
        "random_important_share": float((slices >= threshold).mean()),
        **_std_quantiles(partial_std, "fixed_std"),
        "fixed_important_share": float((partial_std >= threshold).mean()),
    }


def validate_study(study: FactorStudy) -> None:
    """Refuse what no analysis can use: NaN or infinite golden scores, fewer than 2 golden runs, zero σ_GM,
    infinite scores, M < 2 or N < 2."""
    golden = study.golden
    if np.isnan(golden).any():
        raise SeedscopeError("the golden-model scores contain NaN; drop missing golden runs instead")
    if np.isinf(golden).any():
        raise SeedscopeError("the golden-model scores contain an infinite value; every score must be finite")
    if len(golden) < 2:
        raise SeedscopeError(f"the golden model needs at least 2 runs, not {len(golden)}")
    if golden.max() == golden.min():  # not std() == 0: the std of equal floats can be 1e-17
        raise SeedscopeError("all golden-model runs have the same score, so importance (÷ σ_GM) is undefined")
    if not study.grids:
        raise SeedscopeError("the study has no factor experiments")
    for name, grid in study.grids.items():
        if np.isinf(grid.scores).any():
            raise SeedscopeError(f"factor {name!r} has an infinite score; every score must be finite")
        m, n = grid.scores.shape
        if m < 2:
            raise SeedscopeError(f"factor {name!r} has {m} mitigation run(s); at least 2 (M ≥ 2) are needed")
        if n < 2:
            raise SeedscopeError(f"factor {name!r} has {n} investigation run(s); at least 2 (N ≥ 2) are needed")


@dataclass
class FactorAnalysis:
    """Result of :func:`analyze_factors`; DataFrames for notebooks, :meth:`to_dict` for JSON.

    Parameters
    ----------
    summary, groups, baselines, convergence : pandas.DataFrame
        One row per factor (c_std, m_std, golden_std, importance, its interval, …); per (factor,
        mitigation run); Random and Fixed per factor; c, m, IS as M and N grow.
    golden, settings : dict
        The golden-model summary; the settings used.

    Returns
    -------
    FactorAnalysis

    Examples
    --------
    >>> import numpy as np, pandas as pd, seedscope
    >>> rows = [{"experiment": "golden", "score": 0.8 + 0.01 * np.sin(i)} for i in range(20)] + [
    ...     {"experiment": "order", "order": i, "run": g, "score": 0.8 + 0.005 * np.cos(i * g)}
    ...     for g in range(1, 6) for i in range(1, 5)]  # 5 mitigation groups × 4 data orders
    >>> sorted(seedscope.analyze_factors(seedscope.study_from_table(pd.DataFrame(rows)), n_boot=200).to_dict())[:2]
    ['factors', 'golden']
    """

    summary: pd.DataFrame
    groups: pd.DataFrame
    baselines: pd.DataFrame
    convergence: pd.DataFrame
    golden: dict[str, Any]
    settings: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON schema (docs/how-to/factors.md): scores as fractions, stds population."""
        factors = {}
        baselines = self.baselines.astype(object)
        for name, row in self.summary.astype(object).iterrows():
            entry = {key: json_ready(value) for key, value in row.items()}
            entry["baselines"] = {k: json_ready(v) for k, v in baselines.loc[name].items()}
            curve = self.convergence[self.convergence["factor"] == name]
            entry["convergence"] = {
                axis: curve[curve["axis"] == axis][["size", "c_std", "m_std", "importance"]].to_dict("records")
                for axis in ("M", "N")
            }
            groups = self.groups[self.groups["factor"] == name].drop(columns="factor")
            entry["groups"] = [{k: json_ready(v) for k, v in g.items()} for g in groups.to_dict("records")]
            factors[name] = entry
        return {"settings": self.settings, "golden": self.golden, "factors": factors}



def _failed(values: np.ndarray, chance: float | None) -> tuple[int | None, float | None]:
    if chance is None:
        return None, None
    count = int((values < chance).sum())
    return count, count / len(values)


def analyze_factors(
    study: FactorStudy, *, factors: Iterable[str] | None = None, n_boot: int = 10_000, confidence: float = 0.95,
    seed: int = 0, allow_missing: bool = False, allow_small_groups: bool = False,
) -> FactorAnalysis:
    """Importance of every factor of ``study`` (or of ``factors``), with baselines, interval and convergence.

    Parameters
    ----------
    study : FactorStudy
    factors : list of str, optional
        Default: every factor of the study.
    n_boot, confidence, seed
        Resampling of the importance interval.
    allow_missing, allow_small_groups : bool, default False

    Returns
    -------
    FactorAnalysis

    Examples
    --------
    >>> import numpy as np, pandas as pd, seedscope
    >>> rows = [{"experiment": "golden", "score": 0.8 + 0.01 * np.sin(i)} for i in range(20)] + [
    ...     {"experiment": "order", "order": i, "run": g, "score": 0.8 + 0.005 * np.cos(i * g)}
    ...     for g in range(1, 6) for i in range(1, 5)]  # 5 mitigation groups × 4 data orders
    >>> seedscope.analyze_factors(seedscope.study_from_table(pd.DataFrame(rows)), n_boot=200).summary.index.tolist()
    ['order']
    """
    validate_study(study)
    names = list(study.grids) if factors is None else list(factors)
    unknown = [name for name in names if name not in study.grids]
    if unknown:
        raise SeedscopeError(
            f"unknown factor {unknown[0]!r}; this study has {', '.join(map(repr, study.grids))}"
        )
    golden = study.golden
    golden_std = float(golden.std())
    summary, group_frames, baseline_rows, curves = [], [], [], []
    for offset, name in enumerate(names):
        grid = study.grids[name]
        stats = group_stats(grid.scores, factor=name, labels=grid.groups, allow_missing=allow_missing,
                            allow_small_groups=allow_small_groups)
        kept = stats.kept
        if kept.sum() < 2:
            raise SeedscopeError(
                f"factor {name!r} keeps {int(kept.sum())} mitigation run(s) with at least 2 runs; 2 are needed"
            )
        mean, std = stats.partial_mean[kept], stats.partial_std[kept]
        c, m, score = importance_from_groups(mean, std, golden_std)
        low, high = bootstrap_importance(mean, std, golden_std, n_boot=n_boot, confidence=confidence,
                                         seed=seed + offset)
        values = grid.scores[kept][~np.isnan(grid.scores[kept])]
        failed_count, failed_share = _failed(values, study.chance)
        summary.append({
            "factor": name,
            "c_std": float(c), "m_std": float(m), "golden_std": golden_std, "importance": float(score),
            "importance_ci_low": low, "importance_ci_high": high,
            "mean": float(values.mean()), "std": float(values.std()),
            "importance_all_std": float((c - m) / values.std()) if values.std() > 0 else float("nan"),
            "n_runs": int(values.size), "n_groups": int(kept.sum()), "n_configs": int(grid.scores.shape[1]),
            "n_missing": int(np.isnan(grid.scores).sum()), "n_groups_skipped": int((~kept).sum()),
            "n_runs_skipped": int(stats.counts[~kept].sum()),
            "failed_count": failed_count, "failed_share": failed_share,
        })
        group_frames.append(pd.DataFrame({
            "factor": name, "group": list(grid.groups), "partial_mean": stats.partial_mean,
            "partial_std": stats.partial_std, "n_runs": stats.counts, "used": kept,
        }))
        baseline_rows.append({"factor": name, **baselines(std, golden, grid.scores.shape[1])})
        curves.append(convergence_curve(grid, golden_std, allow_missing=allow_missing,
                                        allow_small_groups=allow_small_groups).assign(factor=name))
    failed_count, failed_share = _failed(golden, study.chance)
    golden_summary = {
        "n_runs": int(len(golden)), "mean": float(golden.mean()), "std": golden_std,
        "min": float(golden.min()), "max": float(golden.max()),
        "failed_count": failed_count, "failed_share": failed_share,
    }
    settings = {
        "metric": study.metric, "chance": study.chance, "n_boot": n_boot, "confidence": confidence,
        "seed": seed, "allow_missing": allow_missing, "allow_small_groups": allow_small_groups,
        "std": "population (divisor n)", "scale": "fractions as given (not percentages)",
    }
    return FactorAnalysis(
        summary=pd.DataFrame(summary).set_index("factor"),
        groups=pd.concat(group_frames, ignore_index=True),
        baselines=pd.DataFrame(baseline_rows).set_index("factor"),
        convergence=pd.concat(curves, ignore_index=True)[["factor", "axis", "size", "c_std", "m_std", "importance"]],
        golden=golden_summary,
        settings=settings,
    )
