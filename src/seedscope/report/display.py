"""One way to show a number, and headers in words: what every table shows, in the terminal, Markdown, LaTeX and HTML.

Numbers have four decimals, an interval reads ``0.7220–0.7680``, a yes / no is ``yes`` or ``no``,
a missing value ``—``. :func:`readable` turns a result's frame (snake_case columns, an interval
as two columns ``ci_low`` / ``ci_high``) into the frame a reader sees: each interval one column,
each header in words (:data:`HEADERS`). The CSV and JSON outputs keep the result's own names.
"""

from __future__ import annotations

import math
import numbers

import numpy as np
import pandas as pd

MISSING = "—"
#: a result's column → its header in words (an interval's two columns are shown as one, named by :func:`header`)
HEADERS = {
    "n_runs": "runs", "n_matched": "matched seeds", "n_seeds": "seeds", "n_examples": "examples", "n_pairs": "run pairs",
    "ci": "CI", "t": "t CI", "iqm": "IQM", "iqm_ci": "IQM CI", "mean_ci": "range of the mean",
    "var_ci": "range of VAR", "mean_ci_width": "width (mean)", "var_ci_width": "width (VAR)", "joint_ci": "joint CI",
    "importance_ci": "IS CI", "std": "std (sample SD)", "var_published": "VAR (population SD)",
    "std_sample": "std (sample SD)", "delta": "mean Δ (A − B)", "prob_improvement": "P(A > B)",
    "violation_ratio": "ASO violation ratio", "aso_eps_min": "ASO ε (A over B)", "aso_eps_min_reverse": "ASO ε (B over A)",
    "aso_verdict": "almost stochastic order", "mdd": "smallest detectable Δ", "p_permutation": "p, permutation",
    "p_wilcoxon": "p, Wilcoxon", "joint_delta": "joint Δ", "p_joint": "p, joint", "p_value": "p", "p_holm": "p (Holm)",
    "se": "SE", "se_clustered": "SE (clustered)", "expected_max": "expected maximum", "statistic": "statistic",
    "seed_variance": "seed variance (÷S−1)", "example_variance": "example variance (mean SE²)",
    "total_variance": "total variance", "seed_share": "seed share", "correct_rate": "correct rate",
    "needed_subset_size": "n for target CV", "var_seed": "Var_seed (÷K−1)", "sign_consistency": "sign-consistency",
    "seed_robust": "seed-robust", "mean_delta": "mean Δ", "std_delta": "std of Δ", "score": "full-pool score",
    "paired": "paired", "run": "run", "method": "method", "system": "system",
}
ADJUSTED = {"_holm": "Holm", "_bonferroni": "Bonferroni"}


def format_value(value, digits: int = 4, missing: str = MISSING) -> str:
    """One cell: integers as integers, floats with ``digits`` decimals, yes / no, NaN / None as ``missing``."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return missing
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return missing if math.isnan(float(value)) else f"{float(value):.{digits}f}"
    return str(value)


def format_interval(low, high, digits: int = 4) -> str:
    """``0.7220–0.7680``; ``—`` when either end is missing."""
    if any(value is None or pd.isna(value) for value in (low, high)):
        return MISSING
    return f"{format_value(low, digits)}–{format_value(high, digits)}"


def header(name) -> str:
    """A column's header in words: :data:`HEADERS`, an adjusted p-value's method in brackets, else the name itself."""
    text = str(name)
    if text in HEADERS:
        return HEADERS[text]
    for suffix, method in ADJUSTED.items():
        if text.endswith(suffix) and text[: -len(suffix)] in HEADERS:
            return f"{HEADERS[text[: -len(suffix)]]} ({method})"
    return text


def readable(frame: pd.DataFrame, digits: int = 4) -> pd.DataFrame:
    """``frame`` as a reader sees it: every ``x_low`` / ``x_high`` pair one interval column at the low one's place,
    every header (and the index's name) in words."""
    shown = pd.DataFrame(index=frame.index)
    columns = list(frame.columns)
    for column in columns:
        name = str(column)
        if name.endswith("_high") and f"{name[:-5]}_low" in columns:
            continue
        if name.endswith("_low") and f"{name[:-4]}_high" in columns:
            base = name[:-4]
            shown[header(base)] = [format_interval(a, b, digits) for a, b in zip(frame[column], frame[f"{base}_high"])]
        else:
            shown[header(column)] = frame[column]
    shown.index.name = None if frame.index.name is None else header(frame.index.name)
    return shown
