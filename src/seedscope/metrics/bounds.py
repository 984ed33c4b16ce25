"""What a score may be: finite, of a sane magnitude, and within its metric's range.

Every reader of scores (per-run score tables, per-example scores of framework logs, factor-study
tables) checks its numbers here, so one rule holds everywhere: ``acc 1.5`` or ``85`` is refused
(unless rescaled), ``±inf`` and ``1e308`` are refused, a metric seedscope does not know is only
checked for finiteness and magnitude.
"""

from __future__ import annotations

import math
import re

from seedscope.errors import SeedscopeError

#: larger magnitudes are no score of any metric (and their squares overflow a variance)
ABSURD = 1e15
#: metrics that are fractions in [0, 1] (compared lower-case, after an ``eval_`` … prefix)
UNIT_METRICS = frozenset({
    "accuracy", "acc", "acc_norm", "f1", "f1_macro", "macro_f1", "f1_micro", "micro_f1", "exact_match", "em",
    "quasi_exact_match", "prefix_exact_match", "quasi_prefix_exact_match", "precision", "recall", "auc", "roc_auc",
    "rouge1", "rouge2", "rougel", "rouge_l", "error_rate",
})
#: metrics that are correlations in [−1, 1]
SIGNED_UNIT_METRICS = frozenset({"mcc", "matthews_correlation", "pearson", "pearsonr", "spearman", "spearmanr",
                                 "combined_score"})


def bound_of(metric) -> tuple[float, float] | None:
    """(low, high) of a bounded metric (``acc`` → (0, 1), ``mcc`` → (−1, 1)), None when unbounded or unknown."""
    name = re.sub(r"^(eval|test|validation|val|dev)[_/]", "", str(metric).strip().lower())
    name = name.split(",")[0]  # lm-eval's ``acc,none``
    if name in UNIT_METRICS:
        return 0.0, 1.0
    if name in SIGNED_UNIT_METRICS:
        return -1.0, 1.0
    return None


def check_score(value: float, metric, where: str, *, scale_hint: bool = False,
                bounds: tuple[float, float] | None = None) -> float:
    """A score as a float: finite, at most :data:`ABSURD` in magnitude, within ``bounds`` when the caller knows them
    (a classification score of K classes: [0, 1]), else within its metric's bounds."""
    number = float(value)
    if math.isnan(number):
        raise SeedscopeError(f"{where}: {metric} is NaN, not a number")
    if not math.isfinite(number) or abs(number) > ABSURD:
        raise SeedscopeError(f"{where}: {metric} {number:g} is not a plausible score (infinite or beyond ±{ABSURD:g})")
    given, bounds = bounds is not None, bounds or bound_of(metric)
    if bounds is not None and not bounds[0] <= number <= bounds[1]:
        hint = "; if the values are percentages, pass --scale 0.01" if scale_hint and number > 1 else ""
        raise SeedscopeError(f"{where}: {metric} {number:g} is outside [{bounds[0]:g}, {bounds[1]:g}], the range of "
                             f"{'these scores' if given else 'that metric'}{hint}")
    return number
