"""The factor-importance analysis laid out for reading: IS with its interval, the baselines, the golden line.

Pure layout of a :class:`~seedscope.factor_study.importance.FactorAnalysis` (``seedscope factors``
prints and writes these); no number is computed here.
"""

from __future__ import annotations

import pandas as pd

from seedscope.factor_study.importance import FactorAnalysis
from seedscope.report.display import format_interval, format_value


def summary_frame(result: FactorAnalysis, *, full: bool) -> pd.DataFrame:
    """One row per factor: IS, its interval, c, m, runs, groups, failed share (``full``: every column)."""
    s = result.summary
    interval = [format_interval(lo, hi) for lo, hi in zip(s["importance_ci_low"], s["importance_ci_high"])]
    frame = pd.DataFrame({
        "IS": s["importance"], f"{result.settings['confidence']:.0%} CI": interval,
        "c": s["c_std"], "m": s["m_std"], "runs": s["n_runs"], "groups": s["n_groups"], "failed": s["failed_share"],
    })
    if full:
        frame.insert(4, "σ_GM", s["golden_std"])
        frame.insert(5, "(c−m)/std", s["importance_all_std"])
        frame.insert(6, "mean", s["mean"])
        frame.insert(7, "std", s["std"])
        frame.insert(10, "N", s["n_configs"])
        frame.insert(11, "missing", s["n_missing"])
    return frame


def baseline_frame(result: FactorAnalysis) -> pd.DataFrame:
    """The Random and Fixed baselines of each factor (important when their std reaches 50 % of σ_GM)."""
    b = result.baselines
    return pd.DataFrame({
        "Random std": b["random_std"], "Random imp.": b["random_important"],
        "Fixed std median": b["fixed_std_median"],
        "Fixed std range": [format_interval(lo, hi) for lo, hi in zip(b["fixed_std_min"], b["fixed_std_max"])],
        "Fixed imp. share": b["fixed_important_share"],
        "IS > 0": result.summary["importance"] > 0,
    })


def compact_frame(result: FactorAnalysis) -> pd.DataFrame:
    """The table printed by default: per factor IS, its interval, c and m (population stds) and the runs."""
    return summary_frame(result, full=False)[["IS", f"{result.settings['confidence']:.0%} CI", "c", "m", "runs"]]


def titles(result: FactorAnalysis) -> tuple[str, str]:
    return (f"Factor importance ({result.settings['metric']}; fractions, population std)",
            "Baselines: important when std ≥ 50% of σ_GM")


def golden_line(result: FactorAnalysis) -> str:
    g = result.golden
    return (f"golden model ({result.settings['metric']}, population std): {g['n_runs']} runs, mean "
            f"{format_value(g['mean'])}, σ_GM {format_value(g['std'])}, min {format_value(g['min'])}, max "
            f"{format_value(g['max'])}, failed {format_value(g['failed_share'])}")
