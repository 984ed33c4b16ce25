"""What a result means, in plain words, before any table: the verdict every analysis prints first.

One sentence per finding, from the result's own numbers (nothing here computes a statistic):
how much the metric moves from seed to seed and how often the seeds disagree
(:func:`task_lines`, the HTML report's summary too), which system wins and whether that
survives the seed (:func:`comparison_lines`), how much the seed that draws an evaluation subset
moves a score (:func:`subset_lines`), and which randomness factor matters (:func:`factor_lines`).
Numbers are written as every table writes them: four decimals, intervals as ``0.7220–0.7680``.
"""

from __future__ import annotations

import pandas as pd

from seedscope.analysis.checks import FEW_RUNS
from seedscope.analysis.seed_effects import Analysis
from seedscope.report.tables import baseline_text, format_interval, format_value


def _fraction(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:.4f}"


def few_runs_text(n_runs: int) -> str:
    """The words that mark a result of fewer than :data:`~seedscope.analysis.checks.FEW_RUNS` runs (empty from there
    on)."""
    if n_runs >= FEW_RUNS:
        return ""
    return (f"with {n_runs} run{'s' if n_runs != 1 else ''} the spread and every interval are unreliable (they need "
            f"{FEW_RUNS} runs at least)")


def task_lines(label: str, analysis: Analysis) -> list[str]:
    """Plain-language sentences about one task, from the analysis's own numbers.

    The first is the summary line ("accuracy varies by ±x across seeds; on y of the examples
    the seeds disagree"); the second explains CON and CCON.
    """
    micro = analysis.micro.iloc[0]
    n_runs, n_examples = int(micro["n_runs"]), int(micro["n_examples"])
    parts = []
    metric = analysis.primary_metric
    if metric is not None:
        row = analysis.macro.loc[metric]
        parts.append(
            f"{metric} varies by ±{_fraction(row['var_published'])} across {n_runs} seeds "
            f"(VAR, the population std; mean {_fraction(row['mean'])}, from {_fraction(row['min'])} "
            f"to {_fraction(row['max'])})"
        )
    if "n_distinct" in analysis.stability.columns:
        disagree = int((analysis.stability["n_distinct"] > 1).sum())
        parts.append(f"on {disagree:,} of {n_examples:,} examples ({_fraction(disagree / n_examples)}) the seeds disagree")
        detail = (
            f"Two seeds give the same answer on a share {_fraction(micro['con'])} of the examples on average (CON)"
            + (f" and the same right answer on {_fraction(micro['ccon'])} (CCON)." if pd.notna(micro["ccon"]) else ".")
        )
    else:
        detail = (f"The predictions of two seeds correlate at {_fraction(micro['con'])} on average "
                  f"(CON, Pearson between runs over {n_examples:,} examples).")
    few = few_runs_text(n_runs)
    if few:
        parts.append(few)
    baseline = baseline_text(analysis)
    lines = [f"{label}: " + "; ".join(parts) + ".", detail] + ([baseline[0].upper() + baseline[1:] + "."] if baseline else [])
    if analysis.variance_split is not None:
        split = analysis.variance_split
        lines.append(f"Of the accuracy's variance, {_fraction(split['seed_share'])} comes from the seeds and the rest "
                     f"from which examples were drawn: {split['dominant']} dominate.")
    if analysis.degenerate is not None and len(analysis.degenerate):
        runs = ", ".join(f"{run} ({reason})" for run, reason in analysis.degenerate["reason"].head(5).items())
        lines.append(f"Degenerate runs, {len(analysis.degenerate)} of {n_runs}: {runs}.")
    return lines


def comparison_lines(comparison) -> list[str]:
    """Per pair of systems: which is ahead on the metric and by how much, and whether that survives the seed (the
    interval of the difference over seeds excludes 0, and almost stochastic order does not say the other way)."""
    level = f"{comparison.settings['confidence']:.0%}"
    runs = comparison.systems["n_runs"]
    lines = []
    for (a, b), row in comparison.pairs.iterrows():
        delta = float(row["delta"])
        ahead, behind = (a, b) if delta >= 0 else (b, a)
        low, high = (row["ci_low"], row["ci_high"]) if delta >= 0 else (-row["ci_high"], -row["ci_low"])
        seeds = (f"{int(row['n_matched'])} matched seeds" if row["paired"]
                 else f"{int(runs[a])} and {int(runs[b])} unpaired seeds")
        head = (f"{ahead} is ahead of {behind} on {comparison.metric} by {format_value(abs(delta))} on average "
                f"({level} interval of {ahead} − {behind} over {seeds}: {format_interval(low, high)})")
        excludes = row["ci_low"] > 0 or row["ci_high"] < 0
        reversed_order = f"{behind} almost stochastically dominates" in str(row["aso_verdict"])
        few = few_runs_text(int(min(runs[a], runs[b])))
        if few:
            tail = few
        elif excludes and not reversed_order:
            tail = "the interval excludes 0: the order survives the seed"
        elif excludes:
            tail = "the interval excludes 0, but almost stochastic order says the other way: do not trust the order"
        else:
            tail = "the interval includes 0: another set of seeds could reverse the order"
        lines.append(f"{head}; {tail}." + _permutation_floor(row, 1 - comparison.settings["confidence"]))
    return lines


def _permutation_floor(row, alpha: float) -> str:
    """The paired permutation test's smallest p, 2 of the 2^S sign flips, when it is above the test's level: with 5
    matched seeds no difference reaches p < 0.05."""
    n = int(row["n_matched"]) if row["paired"] else 0
    floor = 2 / 2**n if n >= 2 else None
    if floor is None or floor <= alpha:
        return ""
    return (f" With {n} matched seeds the paired permutation test cannot reach p below {format_value(floor)} (2 of the "
            f"2^{n} sign flips): it needs {next(k for k in range(n, 64) if 2 / 2**k <= alpha)} seeds to reach "
            f"{format_value(alpha)}.")


def subset_lines(result) -> list[str]:
    """Per system how much the subset's seed moves its score (std and CV band), per pair whether its sign holds under
    every subset seed, and the subset size a target CV needs (or that no subset smaller than the pool reaches it)."""
    k, n, pool = len(result.seeds), result.subset_size, result.pool_size
    lines = []
    for name, row in result.summary.iterrows():
        lines.append(f"{name}: on {k} random subsets of {n} of the {pool} examples the score moves by std "
                     f"{format_value(row['std'])} around {format_value(row['mean'])} (CV {format_value(row['cv'])}, "
                     f"{row['band']}).")
    for (a, b), row in result.pairs.iterrows():
        if pd.isna(row["sign_consistency"]):  # every Δ_k is 0
            lines.append(f"{a} and {b} score the same under every subset seed: nothing to order.")
            continue
        ahead, behind = (a, b) if row["mean_delta"] >= 0 else (b, a)
        same = int(row["n_positive"] if ahead == a else row["n_negative"])
        verdict = ("seed-robust: every subset seed orders them the same way" if row["seed_robust"]
                   else "not seed-robust: the subset's seed can reverse their order")
        lines.append(f"{ahead} is ahead of {behind} by {format_value(abs(row['mean_delta']))} on average over the "
                     f"subsets, on {same} of {k} subset seeds; {verdict}.")
    if result.needed_size is not None:
        target = result.settings.get("target_cv")
        for name, needed in result.needed_size["needed_subset_size"].items():
            lines.append(f"{name}: CV stays below {target} from n = {int(needed)} on." if pd.notna(needed) else
                         f"{name}: no subset smaller than the pool brings the CV below {target} (unreachable; at "
                         f"n = {pool} every subset is the whole pool).")
    return lines


def factor_lines(result) -> list[str]:
    """Which factor matters: each factor's importance IS with its interval, the largest first, and what it says
    (above 0 with the interval: the factor alone spreads the score more than all the others together)."""
    level = f"{result.settings['confidence']:.0%}"
    summary = result.summary.sort_values("importance", ascending=False)
    lines = []
    for factor, row in summary.iterrows():
        shown = f"IS {format_value(row['importance'])} ({level} interval {format_interval(row['importance_ci_low'], row['importance_ci_high'])})"
        if pd.notna(row["importance_ci_low"]) and row["importance_ci_low"] > 0:
            meaning = "it matters: alone it spreads the score more than all the other factors together"
        elif pd.notna(row["importance_ci_high"]) and row["importance_ci_high"] < 0:
            meaning = "it matters less than the other factors together"
        else:
            meaning = "its effect cannot be told apart from the other factors'"
        lines.append(f"{factor}: {shown}; {meaning}.")
    important = [str(f) for f, row in summary.iterrows() if pd.notna(row["importance_ci_low"]) and row["importance_ci_low"] > 0]
    head = (f"The factor that matters most is {important[0]}." if important else
            f"No factor's importance is above 0 at {level}: none stands out from the others.")
    return [head] + lines


def score_lines(summary) -> list[str]:
    """One system of per-run scores: its first score's mean and spread over the runs (the score report's line)."""
    metric = summary.macro.index[0]
    row = summary.macro.loc[metric]
    n_runs = len(summary.per_run)
    few = few_runs_text(n_runs)
    return [f"{summary.label}: {metric}: mean {format_value(row['mean'])}, VAR ±{format_value(row['var_published'])} "
            f"over {n_runs} runs (from {format_value(row['min'])} to {format_value(row['max'])}); IQM "
            f"{format_value(row['iqm'])}" + (f"; {few}." if few else ".")]


def sampling_lines(prefix: str, analysis) -> list[str]:
    """Sampled generations: pass@1 and the largest k's pass@k, their spread across the sampling seeds and their
    standard error over items."""
    n_runs = len(analysis.per_run)
    shown = [name for name in ("pass@1", f"pass@{max(analysis.ks)}") if name in analysis.macro.index]
    parts = [f"{name} {format_value(analysis.macro.loc[name, 'mean'])} (VAR ±"
             f"{format_value(analysis.macro.loc[name, 'var_published'])} across {n_runs} sampling seed(s), SE over "
             f"items {format_value(analysis.errors.loc[name, 'se'])})" for name in dict.fromkeys(shown)]
    few = few_runs_text(n_runs)
    return [f"{prefix}" + "; ".join(parts) + (f"; {few}." if few else ".")] if parts else []


def sampled_comparison_lines(comparison) -> list[str]:
    """Sample tables compared on one estimator: per pair which is ahead, by how much, and the chance that one run of
    each orders them the other way."""
    level = f"{comparison.settings.get('confidence', 0.95):.0%}"
    lines = []
    for (a, b), row in comparison.pairs.iterrows():
        delta = float(row["difference"])
        ahead, behind = (a, b) if delta >= 0 else (b, a)
        low, high = (row["ci_low"], row["ci_high"]) if delta >= 0 else (-row["ci_high"], -row["ci_low"])
        excludes = row["ci_low"] > 0 or row["ci_high"] < 0
        inversion = row.get("inversion_probability")
        chance = ("" if inversion is None or pd.isna(inversion) else
                  f"; one run of each orders them the other way with probability {format_value(inversion)}")
        lines.append(f"{ahead} is ahead of {behind} on {comparison.estimator} by {format_value(abs(delta))} ({level} "
                     f"interval of {ahead} − {behind} over items: {format_interval(low, high)}; "
                     f"{'it excludes 0' if excludes else 'it includes 0: the items cannot tell them apart'}){chance}.")
    return lines
