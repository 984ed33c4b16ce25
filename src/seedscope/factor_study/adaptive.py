"""Adaptive run count: add mitigation runs in batches until IS, c and m stop moving.

The reference study fixes N = 10 investigation and M = 100 mitigation runs per factor. Most
of those runs are unnecessary when the estimate has already settled, so seedscope starts from
a small M and adds ``batch`` mitigation runs at a time until, for ``patience`` successive
steps, IS, c/σ_GM and m/σ_GM each change by less than ``tolerance`` (c and m are divided by
σ_GM so that one tolerance fits all three, in the units of IS), or ``cap`` is reached.

:class:`AdaptiveSchedule` is the rule (``factors run`` asks it for the next M after each
batch); :func:`simulate_adaptive` replays it on recorded runs by sub-sampling their mitigation
runs in many random orders, to show how many runs it saves and how close it stays to the
estimate from all runs.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from seedscope.factor_study.importance import (
    FactorStudy,
    group_stats,
    importance_from_groups,
    prefix_importance,
    validate_study,
)
from seedscope.errors import SeedscopeError

REFERENCE_N = 10
REFERENCE_M = 100


def first_converged_step(trace: np.ndarray, tolerance: float, patience: int) -> np.ndarray:
    """Index of the first step after which ``patience`` successive changes all stayed below ``tolerance``.

    ``trace`` is (..., steps, quantities); the answer is (...,) with −1 where it never converged.
    """
    change = np.abs(np.diff(trace, axis=-2)).max(axis=-1) < tolerance  # (..., steps − 1)
    if change.shape[-1] < patience:
        return np.full(change.shape[:-1], -1)
    settled = np.lib.stride_tricks.sliding_window_view(change, patience, axis=-1).all(axis=-1)
    return np.where(settled.any(axis=-1), settled.argmax(axis=-1) + patience, -1)


@dataclass(frozen=True)
class AdaptiveSchedule:
    """Start with ``start`` mitigation runs and add ``batch`` at a time, up to ``cap``."""

    tolerance: float = 0.05
    start: int = 10
    batch: int = 10
    cap: int = REFERENCE_M
    patience: int = 2

    def __post_init__(self) -> None:
        if not self.tolerance > 0:
            raise SeedscopeError(f"the tolerance must be positive, not {self.tolerance}")
        if self.start < 2:
            raise SeedscopeError(f"the adaptive run count must start from at least 2 mitigation runs, not {self.start}")
        if self.batch < 1 or self.patience < 1:
            raise SeedscopeError("the adaptive batch and patience must be at least 1")
        if self.cap < self.start:
            raise SeedscopeError(f"the cap ({self.cap}) is smaller than the start ({self.start})")

    def sizes(self, available: int | None = None) -> np.ndarray:
        """The mitigation-run counts at which the estimate is checked."""
        cap = self.cap if available is None else min(self.cap, available)
        if cap < self.start:
            raise SeedscopeError(f"only {cap} mitigation runs are available; the schedule starts at {self.start}")
        sizes = np.arange(self.start, cap + 1, self.batch)
        return sizes if sizes[-1] == cap else np.append(sizes, cap)

    def trace(self, partial_mean: np.ndarray, partial_std: np.ndarray, golden_std: float,
              sizes: np.ndarray) -> np.ndarray:
        """(…, steps, 3) array of IS, c/σ_GM and m/σ_GM after each step."""
        c, m, score = prefix_importance(partial_mean, partial_std, golden_std, sizes)
        return np.stack([score, c / golden_std, m / golden_std], axis=-1)

    def settled(self, partial_mean: np.ndarray, partial_std: np.ndarray, golden_std: float) -> bool:
        """Whether the mitigation runs done so far (in order) have settled IS, c and m."""
        sizes = self.sizes()
        reached = sizes[sizes <= len(partial_mean)]
        trace = self.trace(partial_mean, partial_std, golden_std, reached)
        return len(reached) > 0 and bool(first_converged_step(trace, self.tolerance, self.patience) >= 0)

    def next_size(self, partial_mean: np.ndarray, partial_std: np.ndarray, golden_std: float,
                  done: int | None = None) -> int | None:
        """How many mitigation runs to have next, given those done so far (``None``: settled or at the cap).

        ``done`` is how many mitigation runs were run (default: as many as there are groups); it
        exceeds the number of groups when some group lost its runs (failed, or too few to keep).
        """
        if self.settled(partial_mean, partial_std, golden_std):
            return None
        later = self.sizes()[self.sizes() > (len(partial_mean) if done is None else done)]
        return int(later[0]) if len(later) else None


def simulate_adaptive(
    study: FactorStudy, schedule: AdaptiveSchedule = AdaptiveSchedule(), *, repeats: int = 200, seed: int = 0,
    reference_n: int = REFERENCE_N, reference_m: int = REFERENCE_M,
) -> pd.DataFrame:
    """Replay ``schedule`` on each factor's recorded runs in ``repeats`` random orders of mitigation runs.

    One row per factor: mitigation runs used (mean, median, max), runs used and saved against the
    reference N × M, how far the adaptive IS lands from the IS of all recorded runs, and, for
    scale, how often a reference-size sample (the first ``reference_m`` runs of the same orders)
    lands within the tolerance of it.
    """
    if repeats < 1:
        raise SeedscopeError(f"repeats must be at least 1, not {repeats}")
    validate_study(study)
    golden_std = float(study.golden.std())
    rng = np.random.default_rng(seed)
    rows = []
    for name, grid in study.grids.items():
        stats = group_stats(grid.scores, factor=name, labels=grid.groups)
        mean, std = stats.partial_mean, stats.partial_std
        _, _, full = importance_from_groups(mean, std, golden_std)
        sizes = schedule.sizes(len(mean))
        order = rng.permuted(np.tile(np.arange(len(mean)), (repeats, 1)), axis=1)
        trace = schedule.trace(mean[order], std[order], golden_std, sizes)
        step = first_converged_step(trace, schedule.tolerance, schedule.patience)
        converged = step >= 0
        step = np.where(converged, step, len(sizes) - 1)
        used = sizes[step]
        final = trace[np.arange(repeats), step, 0]
        error = np.abs(final - full)
        reference_size = min(reference_m, len(mean))
        _, _, at_reference = prefix_importance(mean[order], std[order], golden_std, np.array([reference_size]))
        reference_error = np.abs(at_reference[:, 0] - full)
        n_configs = grid.scores.shape[1]
        reference_runs = reference_n * reference_m
        rows.append({
            "factor": name, "importance_all": float(full), "n_groups_recorded": len(mean), "n_configs": n_configs,
            "m_used_mean": float(used.mean()), "m_used_median": float(np.median(used)), "m_used_max": int(used.max()),
            "runs_used_mean": float(n_configs * used.mean()), "reference_runs": reference_runs,
            "runs_saved_mean": float(reference_runs - n_configs * used.mean()),
            "saved_share": float(1 - n_configs * used.mean() / reference_runs),
            "converged_share": float(converged.mean()),
            "within_tolerance_share": float((error <= schedule.tolerance).mean()),
            "abs_error_mean": float(error.mean()), "abs_error_max": float(error.max()),
            "reference_within_tolerance_share": float((reference_error <= schedule.tolerance).mean()),
        })
    return pd.DataFrame(rows).set_index("factor").assign(**{k: v for k, v in asdict(schedule).items()})
