"""Tables in four renderings: Rich (terminal), Markdown, LaTeX (booktabs) and CSV.

The renderers take any DataFrame; :func:`analysis_sections` and :func:`summary_sections`
turn analysis results into the titled display frames that ``seedscope analyze`` and
``seedscope report`` print. Headers say which spread is which (population vs sample std),
and every value is a fraction in [0, 1], never a percentage.
"""

from __future__ import annotations

import math

import pandas as pd
from rich.table import Table
from rich.text import Text

from seedscope.analysis.summary import TaskSummary
from seedscope.analysis.seed_effects import Analysis
from seedscope.report.display import MISSING, format_interval, format_value, header, readable

#: terminal columns never shrink below this many characters (or their widest value)
RICH_MIN_WIDTH = 15
#: a table is at least this wide (or its title's length), so that its title stays readable; 80 columns hold it
TITLE_WIDTH = 76
MACRO_HEADERS = {
    "mean": "mean",
    "var_published": "VAR (pop. SD)",
    "std_sample": "std (sample SD)",
    "cv": "CV",
}
MICRO_ROWS = {"con": "CON", "ccon": "CCON", "prob_con": "probabilistic consistency π"}
UNSTABLE_COLUMNS = {
    "agreement": "agreement",
    "correct_rate": "correct rate",
    "category": "category",
    "majority_prediction": "majority",
    "label": "gold",
    "prediction_std": "prediction std",
    "text": "text",
}


def _cells(frame: pd.DataFrame, digits: int, missing: str = MISSING) -> tuple[list[str], list[list[str]]]:
    """The header and the cells of ``frame`` as a reader sees it (:func:`~seedscope.report.display.readable`)."""
    frame = readable(frame, digits)
    header = [str(frame.index.name or "")] + [str(c) for c in frame.columns]
    rows = [[str(index)] + [format_value(v, digits, missing) for v in row] for index, row in zip(frame.index, frame.itertuples(index=False))]
    return header, rows


def to_markdown(frame: pd.DataFrame, digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table (index as the first column)."""

    def escape(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    header, rows = _cells(frame, digits)
    lines = ["| " + " | ".join(escape(h) for h in header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
    lines += ["| " + " | ".join(escape(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = {"&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
                  "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
                  "÷": r"$\div$", "−": "$-$", "±": r"$\pm$", "π": r"$\pi$", "ζ": r"$\zeta$", "—": "--",
                  "–": "--", "θ": r"$\theta$", "Δ": r"$\Delta$", "ε": r"$\varepsilon$", "≤": r"$\leq$",
                  "≥": r"$\geq$", "×": r"$\times$"}
#: θ̄ is θ followed by a combining macron, which has no text-mode LaTeX of its own
_THETA_BAR = "θ\u0304"


def latex_escape(text: str) -> str:
    """Escape LaTeX's special characters and the Unicode signs our headers use (plain pdflatex
    stops at θ, Δ, ≤, × …)."""
    return r"$\bar{\theta}$".join(
        "".join(_LATEX_SPECIAL.get(ch, ch) for ch in part) for part in text.split(_THETA_BAR)
    )


def to_latex(frame: pd.DataFrame, digits: int = 4, caption: str | None = None, label: str | None = None) -> str:
    """A booktabs ``table`` environment (needs ``\\usepackage{booktabs}``)."""
    header, rows = _cells(frame, digits)
    lines = [r"\begin{table}[t]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [
        r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in header) + r" \\",
        r"\midrule",
    ]
    lines += [" & ".join(latex_escape(c) for c in row) + r" \\" for row in rows]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines) + "\n"


def to_csv(frame: pd.DataFrame) -> str:
    """CSV with full float precision (empty cell for a missing value)."""
    return frame.to_csv(float_format="%.17g")


def to_rich(frame: pd.DataFrame, title: str | None = None, digits: int = 4) -> Table:
    """A Rich table for the terminal; the title, headers and cells are shown literally (never read as markup)."""
    header, rows = _cells(frame, digits)
    # a long title wraps over at most a few lines instead of a narrow table's width
    table = Table(title=None if title is None else Text(title), title_justify="left", header_style="bold",
                  min_width=min(len(title or ""), TITLE_WIDTH))
    # Headers may wrap on a narrow terminal (between words, never inside one), values never shrink: each column
    # is at least as wide as its widest value (up to RICH_MIN_WIDTH), and a row's name is never broken.
    widths = [max(min(max([len(row[i]) for row in rows], default=1), RICH_MIN_WIDTH),
                  max(map(len, header[i].split()), default=1)) for i in range(len(header))]
    widths[0] = max([len(row[0]) for row in rows], default=1)
    table.add_column(Text(header[0]), style="bold", min_width=widths[0], overflow="fold")
    for name, width in zip(header[1:], widths[1:]):
        table.add_column(Text(name), justify="right", min_width=width, overflow="fold")
    for row in rows:
        table.add_row(*map(Text, row))
    return table


def analysis_sections(analysis: Analysis, top_k: int = 10) -> dict[str, pd.DataFrame]:
    """Titled display frames of one analysis: macro, micro, per run, most unstable examples."""
    micro = analysis.micro.iloc[0]
    n_runs, n_examples, n_pairs = (int(micro[c]) for c in ("n_runs", "n_examples", "n_pairs"))
    level = f"{analysis.confidence:.0%}".replace("%", " %")
    sections = {}
    if len(analysis.macro):
        macro = analysis.macro[list(MACRO_HEADERS)].rename(columns=MACRO_HEADERS)
        for name, (low, high) in {"bootstrap": ("ci_low", "ci_high"), "t": ("t_low", "t_high")}.items():
            macro[f"{level} {name} CI"] = [format_interval(a, b) for a, b in zip(analysis.macro[low], analysis.macro[high])]
        title = (
            f"Macro: spread across {n_runs} runs (fractions). VAR = population std as published (÷S), "
            "std = sample std (÷S−1), CV = std/|mean|, percentile bootstrap and Student-t CI of the mean"
        )
        sections[title] = macro
    micro_frame = pd.DataFrame(
        {
            "mean over pairs": [micro[c] for c in MICRO_ROWS],
            "pair std (population)": [micro[f"{c}_pair_std"] for c in MICRO_ROWS],
        },
        index=pd.Index(list(MICRO_ROWS.values()), name="micro"),
    )
    dropped = f"; {int(micro['n_dropped'])} examples dropped by --intersect" if micro["n_dropped"] else ""
    if not analysis.aligned.has_labels:
        dropped += "; no gold labels, so CCON is undefined"
    if pd.isna(micro["prob_con"]):
        dropped += "; π needs class probabilities (prob_CLASS columns), so it is —"
    if analysis.matrix_sampled:
        micro_frame["pair std SE (sampled)"] = [micro[f"{c}_pair_std_se"] for c in MICRO_ROWS]
        dropped += (f"; means exact, pair std from {int(micro['n_pairs_sampled']):,} pairs sampled with the seed, "
                    "± its standard error")
    sections[f"Micro: {n_pairs} run pairs over {n_examples} examples (fractions; CON: the share of examples two runs "
             f"answer alike, CCON: alike and right{dropped})"] = micro_frame
    if analysis.matrix_sampled:  # no S × S matrix: what it would show, summarised
        sections.update(pair_sections(analysis, top_k))
    if len(analysis.per_run.columns):
        sections["Per run"] = analysis.per_run.rename_axis("run")  # pandas 2.0 may carry a store's "seed" name here
    sections.update(error_bar_sections(analysis))
    unstable = analysis.most_unstable(top_k)
    shown = unstable[[c for c in UNSTABLE_COLUMNS if c in unstable.columns]].rename(columns=UNSTABLE_COLUMNS)
    defined = ("agreement: the share of run pairs that give the same answer; correct rate: the share of runs that are "
               "right" if "agreement" in shown.columns else "prediction std: the spread of the runs' predictions")
    sections[f"Most unstable examples (top {len(unstable)}; {defined})"] = shown
    return sections


def pair_sections(analysis: Analysis, top_k: int = 10) -> dict[str, pd.DataFrame]:
    """The S × S matrices summarised: the distribution of the pairwise values, and the runs that agree least."""
    n_runs = analysis.aligned.n_runs
    source = (f"{len(analysis.pair_sample):,} sampled pairs" if analysis.matrix_sampled
              else f"all {n_runs * (n_runs - 1) // 2:,} pairs")
    distribution = analysis.pair_distribution().rename(index=MICRO_ROWS)
    least = analysis.least_agreeing(top_k).rename(columns={"con": "mean CON", "ccon": "mean CCON"})
    return {
        f"Pairwise values: distribution over {source} (fractions)": distribution,
        f"Least-agreeing runs (top {len(least)}): mean CON / CCON with the other {n_runs - 1:,} runs, exact": least,
    }


#: what the compact tables' spread columns hold, said once under them
SPREAD_LEGEND = ("VAR is the population SD over the seeds (divisor S, as the paper publishes it), std the sample SD "
                 "(divisor S − 1); CI: the percentile bootstrap interval of the mean over the seeds")


#: what the Table 1 layout's rows hold, said once under it
TABLE1_LEGEND = ("ζ: the primary metric's mean over the seeds; VAR: its population SD; CON / CCON: the share of examples "
                 "two seeds answer alike / alike and right")


def spread_frame(macro: pd.DataFrame, confidence: float) -> pd.DataFrame:
    """The compact view of a macro summary: per metric the mean, VAR, std and the bootstrap CI of the mean."""
    level = f"{confidence:.0%}"
    frame = macro[["mean", "var_published", "std_sample"]].rename(columns=MACRO_HEADERS)
    frame[f"{level} CI"] = [format_interval(a, b) for a, b in zip(macro["ci_low"], macro["ci_high"])]
    return frame.rename_axis("metric")


def compact_analysis(analysis: Analysis) -> dict[str, pd.DataFrame]:
    """The one table ``analyze`` prints by default: the spread of each metric over the seeds."""
    return {f"Spread over the {analysis.aligned.n_runs} seeds (fractions)": spread_frame(analysis.macro,
                                                                                          analysis.confidence)}


def compact_scores(summaries, confidence: float) -> dict[str, pd.DataFrame]:
    """Per system of per-run scores, the spread of each score over its runs."""
    return {f"{summary.label}: spread over {len(summary.per_run)} runs": spread_frame(summary.macro, confidence)
            for summary in summaries}


def compact_comparison(comparison) -> dict[str, pd.DataFrame]:
    """The two tables ``compare`` prints by default: each system's mean over its seeds, each pair's difference."""
    level = f"{comparison.settings['confidence']:.0%}"
    systems = comparison.systems[["n_runs", "mean", "std", "ci_low", "ci_high"]]
    pairs = comparison.pairs
    adjusted = "p_permutation_holm" if len(pairs) > 1 and "p_permutation_holm" in pairs else "p_permutation"
    shown = pairs[["delta", "ci_low", "ci_high", "prob_improvement", adjusted]].rename(
        columns={"delta": "Δ (A − B)", "prob_improvement": "P(A > B)", adjusted: "p"})
    shown.index = [f"{a} vs {b}" for a, b in pairs.index]
    return {
        f"Systems on {comparison.metric}: mean over the seeds, {level} bootstrap CI": systems,
        f"Pairs: mean difference A − B over the seeds with its {level} CI; P(A > B): one run of A beats one of B; "
        "p: paired permutation test" + (" (Holm over the pairs)" if adjusted.endswith("holm") else ""):
            shown.rename_axis("pair"),
    }


def error_bar_sections(analysis: Analysis) -> dict[str, pd.DataFrame]:
    """Accuracy's error bars over examples per run, the seed / example variance split, degenerate runs."""
    sections = {}
    if analysis.error_bars is not None:
        clustered = "se_clustered" in analysis.error_bars.columns
        title = ("Error bars over examples: accuracy ± SE (sample variance ÷N−1, Miller 2024)"
                 + ("; clustered SE with the factor √(C/(C−1))" if clustered else ""))
        sections[title] = analysis.error_bars
        split = analysis.variance_split
        frame = pd.DataFrame({"value": split.drop(["dominant", "power"])}).astype(float)
        frame.index = [header(name) for name in frame.index]
        sections[
            f"Variance of accuracy: seeds (÷S−1) vs example sampling (mean SE²), {split['dominant']} dominate; "
            f"smallest detectable Δ: to a system of equal spread and runs, found with power {split['power']:.0%}"
        ] = frame
    if analysis.degenerate is not None and len(analysis.degenerate):
        sections[f"Degenerate runs ({len(analysis.degenerate)} of {analysis.aligned.n_runs}): failed to learn"] = (
            analysis.degenerate
        )
    return sections


def score_sections(summaries, confidence: float) -> dict[str, pd.DataFrame]:
    """Per (task,) system of per-run scores: the macro table and the runs' scores."""
    level = f"{confidence:.0%}".replace("%", " %")
    sections = {}
    for summary in summaries:
        macro = summary.macro[list(MACRO_HEADERS)].rename(columns=MACRO_HEADERS)
        for name, (low, high) in {"bootstrap": ("ci_low", "ci_high"), "t": ("t_low", "t_high"),
                                  "IQM": ("iqm_ci_low", "iqm_ci_high")}.items():
            macro[f"{level} {name} CI"] = [format_interval(a, b) for a, b in zip(summary.macro[low], summary.macro[high])]
        macro.insert(4, "IQM", summary.macro["iqm"])
        sections[f"{summary.label}: spread across {len(summary.per_run)} runs (VAR = population std ÷S, "
                 "std ÷S−1, CV = std/|mean|)"] = macro
        sections[f"{summary.label}: per run"] = summary.per_run
    return sections


def comparison_sections(comparison) -> dict[str, pd.DataFrame]:
    """Titled display frames of a :class:`~seedscope.analysis.compare.Comparison`."""
    level = f"{comparison.settings['confidence']:.0%}"
    pairs = comparison.pairs.copy()
    pairs.index = [f"{a} vs {b}" for a, b in pairs.index]
    pairs.index.name = "pair (A vs B)"
    main = ["n_matched", "paired", "delta", "ci_low", "ci_high", "prob_improvement", "aso_eps_min", "aso_eps_min_reverse",
            "aso_verdict", "mdd"]
    tests = [c for c in pairs.columns if c.startswith("p_") or c.startswith("joint_")]
    sections = {
        f"Systems on {comparison.metric} (sample std ÷S−1; {level} bootstrap CI of the mean over seeds)": comparison.systems,
        f"Pairs: mean difference A − B with {level} CI over seeds, P(A > B), ASO ε_min (A better when < 0.5)": pairs[main],
        "Pairs: tests (paired permutation and Wilcoxon signed-rank on matched seeds, joint seed × example bootstrap; Holm / Bonferroni over pairs)": pairs[tests],
        "Expected maximum over n runs (Dodge et al. 2019)": comparison.expected_max,
        f"Seeds needed: {level} range of the mean and of VAR (population std) with n seeds (extrapolated: n above the "
        "system's own runs, projected from them)": comparison.seeds_needed.set_index("system"),
    }
    if len(comparison.mcnemar):
        mcnemar = comparison.mcnemar.assign(pair=comparison.mcnemar["system_a"] + " vs " + comparison.mcnemar["system_b"])
        sections["McNemar per matched seed (exact binomial below 25 discordant pairs; Holm over seeds)"] = mcnemar.drop(
            columns=["system_a", "system_b"]
        ).set_index("pair")
    return sections


def baseline_text(analysis: Analysis) -> str | None:
    """"ζ 0.81 (accuracy) against the majority-class baseline 0.51: above it by 0.30" (None without labels)."""
    metric = analysis.primary_metric
    if metric is None or metric not in analysis.baseline.index:
        return None
    mean, baseline = float(analysis.macro.loc[metric, "mean"]), float(analysis.baseline[metric])
    kind = "a constant prediction" if analysis.task_type == "regression" else "the majority-class baseline"
    verdict = f"above it by {mean - baseline:.4f}" if mean > baseline else "NOT above it: the runs learned no more than that"
    worst = int((analysis.per_run[metric] <= baseline).sum())
    runs = f"; {worst} of {analysis.aligned.n_runs} runs at or below it" if worst else ""
    return f"mean {metric} {mean:.4f} against {kind} {baseline:.4f}: {verdict}{runs}"


def analysis_long(analysis: Analysis) -> pd.DataFrame:
    """Every number of an analysis as tidy rows: section, name, statistic, value."""
    numeric = analysis.macro.astype({"t_clipped": float}) if "t_clipped" in analysis.macro else analysis.macro
    macro = numeric.rename_axis("name").reset_index().melt(id_vars="name", var_name="statistic")  # a number a cell
    macro.insert(0, "section", "macro")
    micro = analysis.micro.melt(var_name="statistic")
    micro.insert(0, "name", "all_pairs")
    micro.insert(0, "section", "micro")
    per_run = analysis.per_run.rename_axis("name").reset_index().melt(id_vars="name", var_name="statistic")
    per_run.insert(0, "section", "per_run")
    frames = [macro, micro, per_run]
    if analysis.error_bars is not None:
        bars = analysis.error_bars.rename_axis("name").reset_index().melt(id_vars="name", var_name="statistic")
        split = analysis.variance_split.drop("dominant").rename_axis("statistic").reset_index(name="value")
        frames += [bars.assign(section="error_bars"), split.assign(section="variance_split", name="accuracy")]
    return pd.concat(frames, ignore_index=True)[["section", "name", "statistic", "value"]]


def _with_spread(mean, spread, digits: int) -> str:
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return MISSING
    return f"{format_value(mean, digits)} (±{format_value(spread, digits)})"


def summary_sections(summary: TaskSummary, digits: int = 4) -> dict[str, pd.DataFrame]:
    """The paper's Table 1 and Table 7 layouts and the training-size correlation — the last only where some r
    could be computed (3 tasks or more of known, different sizes): a table of blanks is no table."""
    table7 = pd.DataFrame(
        {
            quantity: [
                _with_spread(summary.table7.loc[task, (quantity, "mean")], summary.table7.loc[task, (quantity, "pm")], digits)
                for task in summary.table7.index
            ]
            for quantity in summary.table7.columns.get_level_values(0).unique()
        },
        index=summary.table7.index,
    )
    sections = {
        "Table 1 layout: ζ (primary metric), VAR (population std), CON, CCON (fractions)": summary.table1.rename(
            index={"zeta": "ζ"}
        ),
        "Table 7 layout: mean (± VAR; for CON/CCON ± pair std), fractions; a task scored by another primary metric (CoLA: MCC, STS-B: Pearson) shows it as its Accuracy": table7,
    }
    if summary.correlation["r"].notna().any():
        sections["Pearson correlation of training-set size with VAR, CON, CCON across tasks"] = summary.correlation
    return sections


def render_markdown(sections: dict[str, pd.DataFrame], digits: int = 4) -> str:
    """Titled sections as one Markdown document."""
    return "\n".join(f"### {title}\n\n{to_markdown(frame, digits)}" for title, frame in sections.items())


def render_latex(sections: dict[str, pd.DataFrame], digits: int = 4) -> str:
    """Titled sections as consecutive booktabs tables (captions = titles)."""
    return "\n".join(to_latex(frame, digits, caption=title) for title, frame in sections.items())
