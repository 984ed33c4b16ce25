"""The titled tables of sampled generations: estimators with their spread and error bars, stability, plans.

Headers say which spread is which: VAR (÷S) and std (÷S−1) across sampling seeds, SE over items
(clustered by item: it includes the within-item sampling variance).
"""

from __future__ import annotations

import pandas as pd

from seedscope.analysis.sampled_compare import SampledComparison
from seedscope.analysis.sampling import SamplingAnalysis
from seedscope.report.tables import MACRO_HEADERS


def sampling_sections(analysis: SamplingAnalysis, prefix: str = "", top: int = 10) -> dict[str, pd.DataFrame]:
    """Estimators (mean, spread across seeds, SE over items), micro stability, the ``top`` least stable items,
    Miller's variance split, the plan."""
    macro = analysis.macro[["mean", "var_published", "std_sample", "t_low", "t_high"]].rename(
        columns={**MACRO_HEADERS, "t_low": "t CI low (seeds)", "t_high": "t CI high (seeds)"})
    errors = analysis.errors[["se", "ci_low", "ci_high"]].rename(
        columns={"se": "SE over items", "ci_low": "CI low (items)", "ci_high": "CI high (items)"})
    estimators = pd.concat([macro, errors.set_axis(macro.index)], axis=1).rename_axis("estimator")
    n_runs = len(analysis.per_run)
    micro = analysis.micro.rename(columns={"con": "CON", "ccon": "CCON", "n_items": "items"})
    categories = analysis.stability["category"].value_counts().rename("items").rename_axis("category").to_frame()
    variance = analysis.variance.rename({"between": "Var(x) between items", "within": "E[σ²] within items",
                                         "sampling": "E[σ²/n] left by the samples", "se": "SE of the mean"})
    stability = analysis.stability
    unstable = stability[stability["category"] == "unstable"].sort_values(["con", "correct_rate"], na_position="last")
    unstable = unstable.head(top).rename(columns={"correct_rate": "correct rate", "con": "CON", "ccon": "CCON"})
    unstable.index = [f"{item} ({run})" for run, item in unstable.index]
    sections = {
        f"{prefix}sampling estimators ({n_runs} run(s); VAR and std across sampling seeds, SE over items)": estimators,
        f"{prefix}stability of the samples per run (CON, CCON over sample pairs)": micro,
        f"{prefix}items by stability of their samples": categories,
        f"{prefix}variance of avg@n (Miller 2024)": variance.to_frame("value").rename_axis("part"),
        f"{prefix}items needed for a ± half-width, by samples per item": analysis.plan,
    }
    if top and len(unstable):
        sections[f"{prefix}least stable items (item (run))"] = unstable.drop(columns="category").rename_axis("item")
    return sections


def compact_sampling(analysis: SamplingAnalysis, prefix: str = "") -> dict[str, pd.DataFrame]:
    """The table printed by default: pass@k and maj@k with their mean, spread across seeds and SE over items."""
    wanted = [name for name in analysis.macro.index if str(name).startswith(("pass@", "maj@")) or name == "avg@n"]
    frame = analysis.macro.loc[wanted, ["mean", "var_published", "std_sample"]].rename(columns=MACRO_HEADERS)
    frame["SE over items"] = analysis.errors.loc[wanted, "se"].to_numpy()
    return {f"{prefix}pass@k and maj@k over {len(analysis.per_run)} sampling seed(s) (VAR and std across seeds)":
            frame.rename_axis("estimator")}


def sampled_comparison_sections(comparison: SampledComparison) -> dict[str, pd.DataFrame]:
    """Per system its mean and one run's variance; per pair the paired difference and the ranking inversion."""
    pairs = comparison.pairs.copy()
    pairs.index = [f"{a} − {b}" for a, b in pairs.index]
    sections = {
        f"systems on {comparison.estimator}": comparison.systems,
        f"pairs on {comparison.estimator} (paired by item, sampling variance included)": pairs.rename_axis("pair"),
    }
    for (a, b), plan in comparison.plans.items():
        sections[f"{a} − {b}: minimum detectable difference and items needed, by samples per item"] = plan
    return sections
