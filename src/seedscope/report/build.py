"""``build_report``: tables, figures, unstable examples and one HTML file from a sweep or predictions.

The numbers come from the analysis API (:func:`seedscope.summarize_tasks`, which runs
:func:`seedscope.analyze` per task) and the table layouts from :mod:`seedscope.report.tables`;
this module decides what to show and lays it out. Every section appears when its data exists:
the seed heatmap and training-size figure need several tasks, the factor section a factor
analysis, the subset section a subset analysis, the environment section a store.

Nothing is written until everything is computed, and then every output is written into a
staging directory beside its target and moved into place, so a failure never leaves half a
report behind.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from seedscope import __version__
from seedscope.analysis.factor_table import score_table_from_store, study_from_table
from seedscope.analysis.factors import FactorAnalysis, analyze_factors
from seedscope.analysis.subsets import HIGH_ABOVE, NEGLIGIBLE_BELOW, SubsetVariance
from seedscope.analysis.summary import TaskSummary, summarize_tasks
from seedscope.api import Analysis
from seedscope.errors import SeedscopeError
from seedscope.factors import FACTORS
from seedscope.io import read_predictions
from seedscope.metrics.micro import mean_with_others
from seedscope.plan import parse_study_tag
from seedscope.report import figures as figs
from seedscope.report import tables
from seedscope.report.html import FigureBlock, Section, TableBlock, render_html
from seedscope.report.seeds import SeedTest, friedman_across_seeds, normalise_per_task, seed_task_scores
from seedscope.report.unstable import stability_counts, task_texts, unstable_csv, unstable_examples
from seedscope.store import ExperimentStore

#: task name given to predictions that carry no ``task`` column
DEFAULT_TASK = "predictions"
#: progress callback: (what is being done, steps done, total steps or None while unknown)
Progress = Callable[[str, int, "int | None"], None]


@dataclass
class Report:
    """Everything a report holds; ``html`` is the page, ``figures`` the Matplotlib figures by
    file stem and ``png`` their PNG renderings (the ones embedded in the page)."""

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


def store_environment(store: ExperimentStore) -> pd.DataFrame:
    """Each done run's recorded environment with its task and per-factor seeds (one row per run)."""
    runs = store.runs()
    seeds = runs[["run_id", "task"] + [f for f in FACTORS if f in runs.columns]]
    return seeds.merge(store.environment(), on="run_id", how="inner")


def store_factors(store: ExperimentStore) -> FactorAnalysis | str | None:
    """The factor analysis of a store's factor-study runs; None without such runs, or the one-line
    reason when they cannot be analysed yet (e.g. runs still missing)."""
    if not store.runs()["tag"].map(parse_study_tag).notna().any():
        return None
    try:
        table, info = score_table_from_store(store)
        return analyze_factors(study_from_table(table, metric=info["metric"], chance=info["chance"]))
    except SeedscopeError as error:
        return str(error)


def _load(source, *, task: str | None, data_dir, intersect: bool, options: dict,
          read_options: dict) -> tuple[TaskSummary, pd.DataFrame | None, FactorAnalysis | str | None]:
    """(summary, recorded environment, factor analysis) from store directories, prediction
    files, a table or analyses; the last two only come from stores."""
    environment = factors = None
    if isinstance(source, TaskSummary):
        return source, None, None
    if isinstance(source, Analysis):
        source = {task or DEFAULT_TASK: source}
    if isinstance(source, Mapping):
        if not source or not all(isinstance(a, Analysis) for a in source.values()):
            raise SeedscopeError("a mapping passed to build_report must map task names to Analysis results")
        return summarize_tasks(dict(source)), None, None
    if isinstance(source, pd.DataFrame):
        table = source
    else:
        paths = [Path(p) for p in ([source] if isinstance(source, (str, os.PathLike)) else list(source))]
        table = read_predictions(paths, task=task, data_dir=data_dir, **read_options)
        stores = [ExperimentStore.open(p) for p in paths if ExperimentStore.is_store(p)]
        if stores:
            environment = pd.concat([store_environment(store) for store in stores], ignore_index=True)
            factors = next((found for found in map(store_factors, stores) if found is not None), None)
    if "task" not in table.columns:
        table = table.assign(task=task or DEFAULT_TASK)
    return summarize_tasks(table, intersect=intersect, **options), environment, factors


def _task_of(label: str) -> str:
    """The task name of a summary label (``"rte (roberta)"`` → ``"rte"``)."""
    return label.split(" (")[0]


def _fraction(value: float) -> str:
    return "n/a" if pd.isna(value) else f"{value:.4f}"


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
    return [f"{label}: " + "; ".join(parts) + ".", detail]


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
        self.png[name] = figs.render(fig, "png")
        return FigureBlock(name, caption, self.png[name])


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
    if several and not scores.empty:
        metric_names = sorted({str(a.primary_metric) for a in summary.analyses.values() if a.primary_metric})
        heatmap = figs.seed_task_heatmap(normalise_per_task(scores), metric="/".join(metric_names),
                                         test_text=seed_test.message)
        section.figures.append(builder.figure(
            "seed-task-heatmap", heatmap,
            "Normalised primary metric per seed and task (paper Fig. 3); " + seed_test.message))
    builder.step("seed × task heatmap")
    data = summary.table1.T.assign(train_size=summary.train_sizes)
    data = data[data["train_size"].notna()]
    shown = {q: r for q, r in summary.correlation["r"].items() if q in data and data[q].notna().sum() >= 2}
    if several and len(data) >= 2 and shown:
        fig = figs.train_size_figure(data, shown)
        section.figures.append(builder.figure(
            "train-size", fig, "Training-set size (log scale) against VAR, CON and CCON across tasks, with the "
            "Pearson r of summarize_tasks (paper Figs. 2 and 4)."))
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
    kind = "CON" if analysis.task_type == "classification" else "CON (Pearson between runs)"
    value_label = "pairwise agreement (fraction)" if analysis.task_type == "classification" else "Pearson r between runs"
    section.figures.append(builder.figure(
        f"{slug}-con-matrix",
        figs.con_matrix_figure(analysis.con_matrix, title=f"{label}: pairwise {kind}", value_label=value_label),
        f"{label}: pairwise {kind} between the {n_runs} runs."))
    metric = analysis.primary_metric
    if metric is not None:
        row = analysis.macro.loc[metric]
        section.figures.append(builder.figure(
            f"{slug}-metric-distribution",
            figs.metric_distribution_figure(analysis.per_run[metric], metric=metric, mean=row["mean"],
                                            var_published=row["var_published"],
                                            title=f"{label}: {metric} over {n_runs} runs"),
            f"{label}: {metric} of each run, with the mean and mean ± VAR."))
        section.figures.append(builder.figure(
            f"{slug}-accuracy-consistency",
            figs.accuracy_consistency_figure(analysis.per_run[metric], mean_with_others(analysis.con_matrix),
                                             metric=metric, title=f"{label}: {metric} against consistency"),
            f"{label}: each run's {metric} against its mean CON with the other runs."))
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
        {"runs (seeds)": [", ".join(map(str, a.runs)) for a in summary.analyses.values()],
         "n_runs": [a.aligned.n_runs for a in summary.analyses.values()]},
        index=pd.Index(list(summary.analyses), name="task"),
    )
    section.tables.append(TableBlock("Seeds (runs) per task", runs))
    recorded = environment_tables(environment)
    if not recorded:
        section.lines.append("No run environment was recorded (an experiment store records each run's library "
                             "versions, device and deterministic flags), so they are unknown here.")
    for title, frame in recorded.items():
        section.tables.append(TableBlock(f"Recorded run environment — {title.lower()}", frame))
    section.lines.append(f"Report made with seedscope {__version__}.")
    return section


def assemble(summary: TaskSummary, *, environment: pd.DataFrame | None = None,
             factors: FactorAnalysis | str | None = None,
             subsets: SubsetVariance | None = None, top_k: int = 20,
             data_dir: str | os.PathLike | None = None, title: str = "seedscope report",
             progress: Progress | None = None) -> Report:
    """Lay out a report from an existing summary (no files written)."""
    analyses = summary.analyses
    builder = _Builder(progress, total=len(analyses) + 2 + (factors is not None) + (subsets is not None))
    paper = tables.summary_sections(summary)
    primary = {label: a.per_run[a.primary_metric] for label, a in analyses.items() if a.primary_metric}
    scores = seed_task_scores(primary)
    seed_test = friedman_across_seeds(scores)
    unstable = {}
    for label, analysis in analyses.items():
        texts = None if "text" in analysis.stability.columns else task_texts(_task_of(label), data_dir)
        unstable[label] = unstable_examples(analysis, top_k, texts)
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
    return Report(summary, seed_test, unstable, counts, environment, sections, builder.figures, builder.png, html, paper)


def _stage_dir(target: Path) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))


def _move_dir(staged: Path, target: Path) -> None:
    """Move every staged file into ``target`` (created if absent), file by file atomically."""
    if not target.exists():
        os.replace(staged, target)
        return
    if not target.is_dir():
        raise SeedscopeError(f"{target} exists and is not a directory")
    for item in staged.iterdir():
        os.replace(item, target / item.name)
    staged.rmdir()


def write_outputs(report: Report, *, html=None, latex_dir=None, figures_dir=None, fig_format: str = "png",
                  unstable_csv_path=None) -> list[Path]:
    """Write the requested outputs: stage all of them first, then move each into place."""
    try:
        return _write_outputs(report, html=html, latex_dir=latex_dir, figures_dir=figures_dir, fig_format=fig_format,
                              unstable_csv_path=unstable_csv_path)
    except OSError as error:  # a name too long, no space left, no permission: one sentence, nothing half-written
        raise SeedscopeError(f"cannot write {error.filename or 'the report'}: {error.strerror or error}") from error


def _write_outputs(report: Report, *, html, latex_dir, figures_dir, fig_format: str, unstable_csv_path) -> list[Path]:
    if fig_format not in figs.FIG_FORMATS:
        raise SeedscopeError(f"unknown figure format {fig_format!r}; choose one of {', '.join(figs.FIG_FORMATS)}")
    targets = [Path(p) for p in (html, latex_dir, figures_dir, unstable_csv_path) if p is not None]
    for path in (Path(p) for p in (html, unstable_csv_path) if p is not None):
        if path.is_dir():
            raise SeedscopeError(f"{path} is a directory; give a file name")
    for path in (Path(p) for p in (latex_dir, figures_dir) if p is not None):
        if path.exists() and not path.is_dir():
            raise SeedscopeError(f"{path} exists and is not a directory")
    for path in targets:
        blocking = next((parent for parent in path.parents if parent.exists()), None)
        if blocking is not None and not blocking.is_dir():
            raise SeedscopeError(f"cannot write {path}: {blocking} is a file, not a directory")
    staged: list[tuple[Path, Path]] = []
    try:
        if html is not None:
            staged.append((_stage_file(Path(html), report.html.encode("utf-8")), Path(html)))
        if unstable_csv_path is not None:
            data = unstable_csv(report.unstable).encode("utf-8")
            staged.append((_stage_file(Path(unstable_csv_path), data), Path(unstable_csv_path)))
        if latex_dir is not None:
            folder = _stage_dir(Path(latex_dir))
            staged.append((folder, Path(latex_dir)))
            _write_paper_tables(report.paper_tables, folder)
        if figures_dir is not None:
            folder = _stage_dir(Path(figures_dir))
            staged.append((folder, Path(figures_dir)))
            for name, fig in report.figures.items():
                data = report.png[name] if fig_format == "png" else figs.render(fig, fig_format)
                (folder / f"{name}.{fig_format}").write_bytes(data)
    except BaseException:
        for path, _ in staged:
            shutil.rmtree(path) if path.is_dir() else path.unlink(missing_ok=True)
        raise
    for path, target in staged:
        _move_dir(path, target) if path.is_dir() else os.replace(path, target)
    return targets


def _stage_file(target: Path, data: bytes) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return Path(name)


#: file stems of the paper tables, in the order of :func:`seedscope.report.tables.summary_sections`
PAPER_FILES = ("table1", "table7", "size-correlation")


def _write_paper_tables(paper: dict[str, pd.DataFrame], folder: Path) -> None:
    """One ``.tex`` (booktabs), ``.csv`` and ``.md`` per paper table, and ``tables.tex`` holding
    every table, so that one ``\\input`` brings them all into a paper."""
    stems = [PAPER_FILES[i] if i < len(PAPER_FILES) else f"table-{i + 1}" for i in range(len(paper))]
    latex = []
    for stem, (title, frame) in zip(stems, paper.items()):
        latex.append(tables.to_latex(frame, caption=title, label=f"tab:{stem}"))
        (folder / f"{stem}.tex").write_text(latex[-1], encoding="utf-8")
        (folder / f"{stem}.csv").write_text(tables.to_csv(frame), encoding="utf-8")
        (folder / f"{stem}.md").write_text(f"### {title}\n\n{tables.to_markdown(frame)}", encoding="utf-8")
    header = "% seedscope paper tables (fractions); needs \\usepackage{booktabs}\n"
    (folder / "tables.tex").write_text(header + "\n".join(latex), encoding="utf-8")


def build_report(
    source,
    html: str | os.PathLike | None = None,
    latex_dir: str | os.PathLike | None = None,
    figures_dir: str | os.PathLike | None = None,
    fig_format: str = "png",
    *,
    unstable_csv: str | os.PathLike | None = None,
    task: str | None = None,
    data_dir: str | os.PathLike | None = None,
    intersect: bool = False,
    factors: FactorAnalysis | None = None,
    subsets: SubsetVariance | None = None,
    top_k: int = 20,
    title: str = "seedscope report",
    progress: Progress | None = None,
    read_options: Mapping[str, Any] | None = None,
    **analysis_options,
) -> Report:
    """Build the report of ``source`` and write the requested outputs; returns the :class:`Report`.

    ``source``: an experiment store directory, prediction file(s) (read by
    :func:`seedscope.io.read_predictions`), a prediction table, an :class:`~seedscope.Analysis`,
    a mapping task → Analysis or a :class:`~seedscope.analysis.summary.TaskSummary`. ``task``
    names the task of predictions without a ``task`` column; ``data_dir`` is where task texts
    are read for the unstable examples; ``factors`` a
    :class:`~seedscope.analysis.factors.FactorAnalysis` (found by itself in a store of
    ``seedscope factors run``) and ``subsets`` a
    :class:`~seedscope.analysis.subsets.SubsetVariance` add their sections. Outputs: ``html``
    (one self-contained file), ``latex_dir`` (Table 1 / Table 7 / size correlation as booktabs
    ``.tex`` plus ``.csv`` and ``.md``), ``figures_dir`` (every figure as ``fig_format``),
    ``unstable_csv``. ``read_options`` go to :func:`seedscope.io.read_predictions` (``format``,
    ``run_column`` …), ``analysis_options`` to :func:`seedscope.analyze`.
    """
    if fig_format not in figs.FIG_FORMATS:
        raise SeedscopeError(f"unknown figure format {fig_format!r}; choose one of {', '.join(figs.FIG_FORMATS)}")
    if top_k < 0:
        raise SeedscopeError(f"the number of unstable examples to list must be 0 or more, not {top_k}")
    if progress is not None:
        progress("reading and analysing predictions", 0, None)
    summary, environment, found = _load(source, task=task, data_dir=data_dir, intersect=intersect, options=analysis_options,
                                       read_options=dict(read_options or {}))
    factors = factors if factors is not None else found
    report = assemble(summary, environment=environment, factors=factors, subsets=subsets, top_k=top_k, data_dir=data_dir,
                      title=title, progress=progress)
    write_outputs(report, html=html, latex_dir=latex_dir, figures_dir=figures_dir, fig_format=fig_format,
                  unstable_csv_path=unstable_csv)
    return report
