"""Can two factors be ranked? IS(A) − IS(B) with a bootstrap interval paired over shared mitigation runs.

Two factors' intervals overlapping does not yet say how far apart their importances can be:
every factor of one study is investigated inside the same mitigation runs (the same fixed
configurations of everything else), so their IS estimates share noise. Resampling the shared
mitigation runs once for both factors gives the interval of the difference itself: when it
excludes 0 the factors are ranked; when it does not, its width is the precision at which they
are not (``|IS(A) − IS(B)| < half-width``, at the chosen confidence).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from seedscope.factor_study.importance import FactorStudy, group_stats, importance_from_groups, validate_study
from seedscope.metrics.resampling import interval
from seedscope.validation import check_confidence, check_resamples


def _key(label) -> tuple:
    return tuple(sorted(label.items())) if isinstance(label, dict) else (label,)


def importance_differences(study: FactorStudy, *, n_boot: int = 10_000, confidence: float = 0.95,
                           seed: int = 0) -> pd.DataFrame:
    """One row per pair of factors: IS difference, its paired interval, the mitigation runs shared, and whether
    the interval excludes 0 (the factors are ranked)."""
    validate_study(study)
    check_confidence(confidence)
    check_resamples(n_boot)
    golden_std = float(study.golden.std())
    per_factor = {}
    for name, grid in study.grids.items():
        stats = group_stats(grid.scores, factor=name, labels=grid.groups, allow_missing=True, allow_small_groups=True)
        per_factor[name] = {_key(label): (stats.partial_mean[j], stats.partial_std[j])
                            for j, label in enumerate(grid.groups) if stats.kept[j]}
    rows = []
    for offset, (a, b) in enumerate(itertools.combinations(study.grids, 2)):
        shared = [key for key in per_factor[a] if key in per_factor[b]]
        if len(shared) < 2:
            continue
        values = {f: np.array([per_factor[f][key] for key in shared]) for f in (a, b)}  # groups × (mean, std)
        point = {f: importance_from_groups(values[f][:, 0], values[f][:, 1], golden_std)[2] for f in (a, b)}

        def difference(drawn):  # one draw of the shared groups for both factors: the pairing
            mean_a, std_a, mean_b, std_b = drawn
            return (importance_from_groups(mean_a, std_a, golden_std)[2]
                    - importance_from_groups(mean_b, std_b, golden_std)[2])

        paired = (values[a][:, 0], values[a][:, 1], values[b][:, 0], values[b][:, 1])
        low, high = interval(difference, paired, n_resamples=n_boot, confidence=confidence, seed=seed + offset)
        rows.append({"factor_a": a, "factor_b": b, "difference": float(point[a] - point[b]), "ci_low": float(low),
                     "ci_high": float(high), "n_shared_groups": len(shared), "ranked": bool(low > 0 or high < 0)})
    columns = ["factor_a", "factor_b", "difference", "ci_low", "ci_high", "n_shared_groups", "ranked"]
    return pd.DataFrame(rows, columns=columns).set_index(["factor_a", "factor_b"])
