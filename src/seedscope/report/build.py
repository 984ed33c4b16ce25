"""``assemble``: a report's sections, figures and HTML page from analysis results (nothing is read or written).

The numbers come from the analysis (:func:`seedscope.analysis.summary.summarize_tasks`, which
runs :func:`seedscope.analysis.seed_effects.analyze` per task) and the table layouts from
:mod:`seedscope.report.tables`; this module decides what to show and lays it out. Every
section appears when its data exists: the seed heatmap and training-size figure need several
tasks, the factor section a factor analysis, the subset section a subset analysis, the
environment section a recorded environment. :mod:`seedscope.report.write` writes the result.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable, Mapping

import pandas as pd
from matplotlib.figure import Figure

from seedscope.version import __version__
from seedscope.factor_study.importance import FactorAnalysis
from seedscope.analysis.subsets import HIGH_ABOVE, NEGLIGIBLE_BELOW, SubsetVariance
from seedscope.analysis.summary import MIN_TASKS_FOR_CORRELATION, TaskSummary
from seedscope.analysis.seed_effects import Analysis
from seedscope.report import figures as figs
from seedscope.report import tables
from seedscope.report.html import FigureBlock, Section, TableBlock, render_html
from seedscope.report.seeds import SeedTest, friedman_across_seeds, seed_task_scores
from seedscope.report.unstable import stability_counts, unstable_examples
from seedscope.report.verdict import factor_lines, subset_lines, task_lines

#: progress callback: (what is being done, steps done, total steps or None while unknown)
Progress = Callable[[str, int, "int | None"], None]


@dataclass
class Report:
    """Everything a report holds; ``html`` is the page, ``figures`` the Matplotlib figures by
    file stem and ``png`` their PNG renderings at screen resolution (the ones embedded in the page;
    :func:`seedscope.report.write.write_outputs` renders the figure files at 300 dpi)."""

    summary: TaskSummary
    seed_test: SeedTest
    unstable: dict[str, pd.DataFrame]
    counts: pd.DataFrame
    environment: pd.DataFrame | None
    sections: list[Section]
    figures: dict[str, Figure]
    png: dict[str, bytes]
    html: str
    paper_tables: dict[str, pd.DataFrame]
    #: what the reader should know about the inputs (groups left out …), for the command line to show
    notes: list[str] = field(default_factory=list)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", str(text)).strip("-").lower() or "task"


def environment_tables(environment: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """The store's per-run environment (one row per run) split for reading: the settings every
    run shares (setting → value), and those that differ (one row per run)."""
    if environment is None or environment.empty or len(environment.columns) <= 1:
        return {}
    frame = environment.set_index("run_id") if "run_id" in environment.columns else environment
    text = frame.astype(str)
    constant = [c for c in text.columns if text[c].nunique(dropna=False) == 1]
    varying = [c for c in text.columns if c not in constant]
    out = {}
    if constant:
        out["Shared by every run"] = pd.DataFrame(
            {"value": [text[c].iloc[0] for c in constant]}, index=pd.Index(constant, name="setting"))
    if varying:
        out["Differs between runs"] = text[varying]
    return out


def throughput_lines(environment: pd.DataFrame | None) -> list[str]:
    """One sentence on the training throughput the runs recorded (medians), or none (runs that train nothing, or
    stored before seedscope recorded it)."""
    if environment is None or "throughput.mfu" not in environment.columns:
        return []
    runs = environment.dropna(subset=["throughput.mfu"])
    if runs.empty:
        return []
    median = {key: float(pd.to_numeric(runs[f"throughput.{key}"], errors="coerce").median())
              for key in ("tokens_per_second", "padding_fraction", "padded_shapes", "mfu")}
    peaks = ", ".join(dict.fromkeys(runs["throughput.peak_flops_source"].astype(str)))
    return [f"Training throughput (median of {len(runs)} fine-tuning run(s)): {median['tokens_per_second']:,.0f} real "
            f"tokens/s, {median['padding_fraction']:.1%} of the processed tokens padding, "
            f"{median['padded_shapes']:.0f} padded length(s), MFU {median['mfu']:.2%} (model FLOPs 6·N per token plus "
            f"attention, against {peaks}; docs/how-to/gpu-cost.md)."]


def task_of(label: str) -> str:
    """The task name of a summary label (``"rte (roberta)"`` → ``"rte"``)."""
    return label.split(" (")[0]


@dataclass
class _Builder:
    """Collects figures (by file stem) while sections are laid out."""

    progress: Progress | None
    total: int = 0
    done: int = 0
    figures: dict[str, Figure] = field(default_factory=dict)
    png: dict[str, bytes] = field(default_factory=dict)

    def step(self, what: str) -> None:
        self.done += 1
        if self.progress is not None:
            self.progress(what, self.done, self.total)

    def figure(self, name: str, fig: Figure, caption: str) -> FigureBlock:
        self.figures[name] = fig
        self.png[name] = figs.render(fig, "png", dpi=figs.SCREEN_DPI)
        return FigureBlock(name, caption, self.png[name], dpi=figs.SCREEN_DPI)


def _summary_section(summary: TaskSummary, paper: dict[str, pd.DataFrame], seed_test: SeedTest,
                     counts: pd.DataFrame, builder: _Builder, scores: pd.DataFrame) -> Section:
    section = Section("Summary")
    for label, analysis in summary.analyses.items():
        section.lines.append(task_lines(label, analysis)[0])
    several = len(summary.analyses) > 1
    if several and not scores.empty:
        section.lines.append(seed_test.message)
    section.tables += [TableBlock(title, frame) for title, frame in paper.items()]
    if not counts.empty:
        section.tables.append(TableBlock("Examples per stability category (robust = every seed right; "
                                         "consistently_wrong = every seed the same wrong answer)", counts))
    shared = scores.loc[:, scores.notna().sum() >= 2]  # tasks with several seeds, and seeds that several of them ran
    shared = shared[shared.notna().sum(axis=1) >= 2]
    shared = shared.loc[:, shared.notna().sum() >= 2]
    if several and shared.shape[0] >= 2 and shared.shape[1] >= 2:
        metric_names = sorted({str(a.primary_metric) for a in summary.analyses.values() if a.primary_metric})
        heatmap = figs.seed_task_heatmap(shared, metric=" / ".join(figs.metric_label(m) for m in metric_names))
        section.figures.append(builder.figure(
            "seed-task-heatmap", heatmap,
            "Primary metric per seed and task (paper Fig. 3): each cell shows the seed's value, its colour the "
            "seed's place between its task's lowest and highest seed (the range under each task). " + seed_test.message))
    builder.step("seed × task heatmap")
    data = summary.table1.T.assign(train_size=summary.train_sizes)
    data = data[data["train_size"].notna()]
    shown = {q: r for q, r in summary.correlation["r"].items() if q in data and data[q].notna().sum() >= 2}
    if several and data["train_size"].nunique() >= 2 and shown:
        fig = figs.train_size_figure(data, shown, min_tasks=MIN_TASKS_FOR_CORRELATION)
        caption = ("Training examples the runs used (log scale) against VAR, CON and CCON across tasks"
                   + (", with the Pearson r of summarize_tasks (paper Figs. 2 and 4)." if len(data) >= MIN_TASKS_FOR_CORRELATION
                      else f"; with {len(data)} tasks no line or correlation is drawn (it needs at least "
                           f"{MIN_TASKS_FOR_CORRELATION})."))
        section.figures.append(builder.figure("train-size", fig, caption))
    elif several and len(data) >= 2:
        section.lines.append(f"No training-size figure: every task trained on {data['train_size'].iloc[0]:,.0f} "
                             "examples, so size cannot explain their differences.")
    builder.step("training-size figure")
    return section


def _task_section(label: str, analysis: Analysis, unstable: pd.DataFrame, builder: _Builder) -> Section:
    section = Section(f"Task {label}", lines=task_lines(label, analysis))
    slug = _slug(label)
    for title, frame in tables.analysis_sections(analysis, top_k=0).items():
        if not title.startswith("Most unstable"):
            section.tables.append(TableBlock(title, frame))
    section.tables.append(TableBlock(
        f"Most unstable examples (top {len(unstable)}), with each seed's prediction", unstable))
    n_runs = analysis.aligned.n_runs
    classes = analysis.task_type == "classification"
    kind = "CON" if classes else "CON (Pearson r between runs)"
    value_label = "CON: share of examples\nthe two runs agree on" if classes else "CON: Pearson r between\nthe two runs' predictions"
    if analysis.con_matrix is not None:
        section.figures.append(builder.figure(
            f"{slug}-con-matrix",
            figs.con_matrix_figure(analysis.con_matrix, title=f"{label}: pairwise CON", value_label=value_label),
            f"{label}: pairwise {kind} between the {n_runs} runs, on the whole scale "
            f"({'0–1' if classes else 'up to 1'}); the colour bar gives the pairs' own range."))
    else:  # thousands of runs: the distribution of a sample of pairs, not millions of cells
        sampled, pairs = len(analysis.pair_sample), n_runs * (n_runs - 1) // 2
        section.figures.append(builder.figure(
            f"{slug}-con-pairs",
            figs.pair_values_figure(analysis.pair_sample["con"], title=f"{label}: pairwise CON, sampled pairs",
                                    value_label=value_label.replace("\n", " "), n_pairs=pairs),
            f"{label}: pairwise {kind} of {sampled:,} run pairs drawn at random (of {pairs:,}; seeded)."))
    metric = analysis.primary_metric
    if metric is not None:
        row = analysis.macro.loc[metric]
        named = figs.metric_label(metric)
        section.figures.append(builder.figure(
            f"{slug}-{_slug(metric)}-distribution",
            figs.metric_distribution_figure(analysis.per_run[metric], metric=metric, mean=row["mean"],
                                            var_published=row["var_published"],
                                            title=f"{label}: {named} over {n_runs} runs"),
            f"{label}: {named} of each run, with the mean and mean ± VAR (the population standard deviation, "
            "divisor S, as the paper publishes it)."))
        section.figures.append(builder.figure(
            f"{slug}-{_slug(metric)}-consistency",
            figs.accuracy_consistency_figure(analysis.per_run[metric], analysis.run_agreement["con"],
                                             metric=metric, title=f"{label}: {named} against CON"),
            f"{label}: each run's {named} against its mean CON with the other runs."))
    if "agreement" in analysis.stability.columns:
        section.figures.append(builder.figure(
            f"{slug}-agreement", figs.agreement_histogram(analysis.stability["agreement"],
                                                          title=f"{label}: per-example agreement"),
            f"{label}: per-example agreement (share of run pairs giving the same answer)."))
    builder.step(f"task {label}")
    return section


def _factor_section(factors: FactorAnalysis | str, builder: _Builder) -> Section:
    section = Section("Randomness factors")
    if isinstance(factors, str):
        section.lines.append(f"The store holds factor-study runs, but they cannot be analysed yet: {factors}")
        builder.step("factor importance")
        return section
    section.lines += factor_lines(factors)  # the verdict the command line prints first
    columns = [c for c in ("importance", "importance_ci_low", "importance_ci_high", "c_std", "m_std",
                           "golden_std", "n_runs", "n_groups") if c in factors.summary.columns]
    section.tables.append(TableBlock("Factor importance IS = (c − m) / σ_GM with its bootstrap interval "
                                     "(stds are population stds)", factors.summary[columns]))
    section.figures.append(builder.figure(
        "factor-importance", figs.factor_importance_figure(factors.summary),
        "Importance of each randomness factor with its bootstrap interval."))
    builder.step("factor importance")
    return section


def _subset_section(subsets: SubsetVariance, builder: _Builder) -> Section:
    section = Section("Evaluation-subset seeds")
    section.lines.append(
        f"Score {subsets.score} on {len(subsets.seeds)} random subsets of {subsets.subset_size} of the "
        f"{subsets.pool_size} examples; CV bands: negligible < {NEGLIGIBLE_BELOW} ≤ moderate ≤ {HIGH_ABOVE} < high."
    )
    section.lines += subset_lines(subsets)  # the verdict the command line prints first
    section.tables.append(TableBlock("Per system: mean, Var_seed (divisor K−1), std, CV and its band", subsets.summary))
    section.figures.append(builder.figure(
        "subset-cv", figs.subset_cv_figure(subsets.summary["cv"], (NEGLIGIBLE_BELOW, HIGH_ABOVE)),
        "Subset-seed CV per system, with the band limits."))
    if len(subsets.deltas.columns):
        section.tables.append(TableBlock("Per pair of systems: mean Δ, sign-consistency, seed-robust", subsets.pairs))
        section.figures.append(builder.figure(
            "subset-deltas", figs.subset_delta_figure(subsets.deltas),
            "Per-seed difference Δ between systems; seed-robust when all points lie on one side of 0."))
    builder.step("subset seeds")
    return section


def _environment_section(environment: pd.DataFrame | None, summary: TaskSummary) -> Section:
    section = Section("Run environment")
    runs = pd.DataFrame(
        {"runs (seeds)": [_listed(a.runs) for a in summary.analyses.values()],
         "n_runs": [a.aligned.n_runs for a in summary.analyses.values()]},
        index=pd.Index(list(summary.analyses), name="task"),
    )
    section.tables.append(TableBlock("Seeds (runs) per task", runs))
    recorded = environment_tables(environment)
    section.lines += throughput_lines(environment)
    if not recorded:
        section.lines.append("No run environment was recorded (an experiment store records each run's library "
                             "versions, device and deterministic flags), so they are unknown here.")
    for title, frame in recorded.items():
        section.tables.append(TableBlock(f"Recorded run environment — {title.lower()}", frame))
    section.lines.append(f"Report made with seedscope {__version__}.")
    return section


def _listed(runs: list, shown: int = 50) -> str:
    """The runs' names, the first ``shown`` of thousands followed by how many there are."""
    names = ", ".join(map(str, runs[:shown]))
    return names if len(runs) <= shown else f"{names} … ({len(runs):,} runs)"


def assemble(summary: TaskSummary, *, environment: pd.DataFrame | None = None,
             factors: FactorAnalysis | str | None = None,
             subsets: SubsetVariance | None = None, top_k: int = 20,
             texts: Mapping[str, pd.DataFrame | None] | None = None, title: str = "seedscope report",
             progress: Progress | None = None) -> Report:
    """Lay out a report from a summary (no files read or written).

    ``texts`` maps a task name to its examples' ``text`` / ``text_pair`` (index example_id;
    see :func:`seedscope.io.results.texts.task_texts`), shown beside unstable examples whose
    predictions carried no text.
    """
    analyses = summary.analyses
    builder = _Builder(progress, total=len(analyses) + 2 + (factors is not None) + (subsets is not None))
    paper = tables.summary_sections(summary)
    primary = {label: a.per_run[a.primary_metric] for label, a in analyses.items() if a.primary_metric}
    scores = seed_task_scores(primary)
    seed_test = friedman_across_seeds(scores)
    unstable = {}
    for label, analysis in analyses.items():
        unstable[label] = unstable_examples(analysis, top_k, (texts or {}).get(task_of(label)))
    counts = stability_counts(analyses)
    sections = [_summary_section(summary, paper, seed_test, counts, builder, scores)]
    sections += [_task_section(label, a, unstable[label], builder) for label, a in analyses.items()]
    if factors is not None:
        sections.append(_factor_section(factors, builder))
    if subsets is not None:
        sections.append(_subset_section(subsets, builder))
    sections.append(_environment_section(environment, summary))
    n_runs = sorted({a.aligned.n_runs for a in analyses.values()})
    subtitle = (f"{len(analyses)} task(s), {'/'.join(map(str, n_runs))} seeds each; "
                "every number is a fraction in [0, 1]; VAR is the population std (divisor S).")
    html = render_html(title, sections, subtitle)
    notes = []
    if len(analyses) > 1 and summary.correlation["r"].isna().all():
        sizes = int(summary.train_sizes.notna().sum())
        notes.append(f"no size-correlation table: the Pearson r of training-set size with VAR, CON and CCON needs at "
                     f"least {MIN_TASKS_FOR_CORRELATION} tasks of known, different training sizes ({sizes} known here)")
    return Report(summary, seed_test, unstable, counts, environment, sections, builder.figures, builder.png, html, paper,
                  notes)
