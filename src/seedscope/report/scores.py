"""The report of per-run score tables: the macro part per system, and the comparison when there are several.

Per-run scores carry no per-example predictions, so this report has no CON / CCON, unstable
examples or agreement figures; it says so at the top. Nothing is read or written here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from matplotlib.figure import Figure

from seedscope.analysis.compare import Comparison
from seedscope.analysis.run_scores import NEEDS_PREDICTIONS, ScoreSummary
from seedscope.report import figures as figs
from seedscope.report import tables
from seedscope.report.html import FigureBlock, Section, TableBlock, render_html
from seedscope.report.verdict import score_lines
from seedscope.version import __version__


@dataclass
class ScoreReport:
    """What :func:`seedscope.report.write.write_outputs` writes: the page, figures, paper tables."""

    html: str
    figures: dict[str, Figure]
    png: dict[str, bytes]
    paper_tables: dict[str, pd.DataFrame]
    unstable: dict[str, pd.DataFrame] = field(default_factory=dict)


def assemble_scores(summaries: list[ScoreSummary], comparison: Comparison | None, *, confidence: float,
                    notes: list[str], title: str = "seedscope report") -> ScoreReport:
    """Lay out the report of per-run scores (one section per system, one for the comparison)."""
    figures: dict[str, Figure] = {}
    png: dict[str, bytes] = {}
    overview = Section("Summary", lines=[NEEDS_PREDICTIONS[0].upper() + NEEDS_PREDICTIONS[1:] + "."] + list(notes))
    sections = [overview]
    paper = {}
    for index, summary in enumerate(summaries):
        section = Section(summary.label)
        for caption, frame in tables.score_sections([summary], confidence).items():
            section.tables.append(TableBlock(caption, frame))
        metric = summary.macro.index[0]
        row = summary.macro.loc[metric]
        name = f"scores-{index + 1}"
        figures[name] = figs.metric_distribution_figure(summary.per_run[metric], metric=str(metric), mean=row["mean"],
                                                         var_published=row["var_published"],
                                                         title=f"{summary.label}: {metric} over {len(summary.per_run)} runs")
        png[name] = figs.render(figures[name], "png", dpi=figs.SCREEN_DPI)
        section.figures.append(FigureBlock(name, f"{summary.label}: each run's {metric}, the mean and mean ± VAR "
                                                 "(the population standard deviation).", png[name],
                                           dpi=figs.SCREEN_DPI))
        section.lines += score_lines(summary)
        sections.append(section)
        paper[f"{summary.label}: spread across runs"] = summary.macro
    if comparison is not None:
        section = Section(f"Comparison on {comparison.metric}", lines=list(comparison.notes))
        for caption, frame in tables.comparison_sections(comparison).items():
            section.tables.append(TableBlock(caption, frame))
        sections.append(section)
    subtitle = f"{len(summaries)} system(s) from per-run scores; seedscope {__version__}"
    return ScoreReport(render_html(title, sections, subtitle), figures, png, paper)
