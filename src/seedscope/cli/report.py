"""``seedscope report``: tables, figures, unstable examples and one HTML file from a sweep or predictions."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

from seedscope.cli.inputs import (
    PREDICTIONS,
    SCORE_TABLES,
    ClusterColumn,
    DataDir,
    IdColumn,
    InputFormat,
    Intersect,
    LabelColumn,
    LmEvalFilter,
    PredictionColumn,
    Reading,
    RunColumn,
    RunsBy,
    Scale,
    SystemColumn,
    READING_RENAMES,
    Task,
    ignored_options,
    metric_option,
)
from seedscope.cli.outputs import TOP, Top, output_console, print_notes
from seedscope.cli.subsets import SUBSET_RENAMES, SUBSET_SEEDS, SubsetScore, SubsetSeeds, SubsetSize
from seedscope.cli.vocabulary import ADVANCED, renamed
from seedscope.errors import SeedscopeError

HELP = (
    "Everything the paper shows, ready to paste, plus the views that find the problem examples and seeds: "
    "Table 1 / Table 7 layouts (LaTeX booktabs, CSV, Markdown), the seed × task heatmap with a Friedman test, "
    "training-set size against VAR / CON / CCON, per task the S×S CON matrix, the metric over seeds, per-example "
    "agreement and accuracy against consistency, the most unstable examples with every seed's prediction, and the "
    "run environment, all in ONE self-contained HTML file that works offline.\n\n"
    "DIR_OR_FILES is an experiment directory from `seedscope sweep` or `seedscope factors run`, or prediction files "
    "(one per run, or one long table with run and task columns) as read by `seedscope analyze`. Without any output "
    "option the HTML report is written to seedscope-report.html. Every number is a fraction in [0, 1]; VAR is the "
    "population std (divisor S), as published.\n\n"
    "Examples:\n\n"
    "```\n"
    "seedscope report examples/rte/*.csv --html rte.html\n"
    "seedscope report <sweep>/ --tables tables/ --figures figs/ --fig-format pdf\n"
    "seedscope report <preds>/*.csv --task rte --unstable-csv unstable.csv\n"
    "seedscope report <sweep>/ --factor-scores <scores>.csv --html sst2.html\n"
    "seedscope report <sweep>/ --subset-scores <a>.csv --subset-scores <b>.csv \\\n"
    "  --subset-size 200\n"
    "```\n\n"
    "Per-run score tables (one row per run: `model, seed, acc`, or one column per system) give a report of their "
    "own: per system the spread across runs with bootstrap, t and IQM intervals, and with two or more systems their "
    "comparison; the per-example sections need predictions.\n\n"
    "--subset-scores adds the evaluation-subset seed section (CV per system, per-seed Δ between systems): the "
    "score files are read exactly as `seedscope subsets` reads them (one file per system, or long tables with a "
    "system column) and need --subset-size.\n"
)


class FigFormat(str, Enum):
    png = "png"
    pdf = "pdf"
    svg = "svg"


DEFAULT_HTML = Path("seedscope-report.html")


#: options a per-run score table cannot use, and options per-example predictions cannot use
UNUSED_BY_SCORE_TABLES = {name: SCORE_TABLES for name in (
    "id_column", "prediction_column", "label_column", "cluster_column", "lm_eval_filter", "runs_by", "data_dir",
    "intersect", "top")}
UNUSED_BY_PREDICTIONS = {"system_column": PREDICTIONS, "scale": PREDICTIONS,
                         "metric": "per-example predictions (their report shows each task's primary metric)"}
ReportMetric = metric_option("a per-run score table's column (default: the first score column)", ADVANCED)
FactorScores = Annotated[Optional[Path], typer.Option(
    "--factor-scores", metavar="FILE",
    help="A factor score table (as `seedscope factors analyze` reads it) whose factor importance the report adds.")]
SubsetScores = Annotated[Optional[list[Path]], typer.Option(
    "--subset-scores", metavar="FILE",
    help="Score file(s) as `seedscope subsets` reads them (repeatable): adds the evaluation-subset seed section.")]
#: the old option names report still reads, for one release
RENAMES = {**READING_RENAMES, **SUBSET_RENAMES, "--latex": "--tables"}


def report_command(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., metavar="DIR_OR_FILES", show_default=False,
                                       help="Experiment directory or prediction files."),
    html: Optional[Path] = typer.Option(None, "--html", metavar="FILE", help="Write the self-contained HTML report here."),
    tables: Optional[Path] = typer.Option(
        None, "--tables", metavar="DIR", help="Folder for the paper tables: table1, table7 and size-correlation as .tex "
        "(booktabs), .csv and .md, and tables.tex."),
    figures: Optional[Path] = typer.Option(None, "--figures", metavar="DIR", help="Folder for every figure as a file."),
    fig_format: Optional[FigFormat] = typer.Option(
        None, "--fig-format", metavar="png|pdf|svg", help="Format of the --figures files (default png)."),
    unstable_csv: Optional[Path] = typer.Option(
        None, "--unstable-csv", metavar="FILE", help="Write the most unstable examples of every task as CSV."),
    factor_scores: FactorScores = None,
    subset_scores: SubsetScores = None,
    subset_size: SubsetSize = None,
    subset_seeds: SubsetSeeds = SUBSET_SEEDS,
    subset_score: SubsetScore = None,
    title: str = typer.Option("seedscope report", "--title", metavar="TEXT", help="Title of the HTML report."),
    top: Top = TOP,
    task: Task = None,
    data_dir: DataDir = None,
    intersect: Intersect = False,
    input_format: InputFormat = None,
    run_column: RunColumn = None,
    id_column: IdColumn = None,
    prediction_column: PredictionColumn = None,
    label_column: LabelColumn = None,
    cluster_column: ClusterColumn = None,
    lm_eval_filter: LmEvalFilter = None,
    runs_by: RunsBy = None,
    metric: ReportMetric = None,
    system_column: SystemColumn = None,
    scale: Scale = None,
) -> None:
    from seedscope.factor_study.importance import analyze_factors
    from seedscope.factor_study.scores import study_from_table
    from seedscope.io import read_score_table

    files = ReportFiles(html, tables, figures, (fig_format or FigFormat.png).value, unstable_csv)
    if fig_format is not None and figures is None:
        raise SeedscopeError("--fig-format needs --figures DIR to say where the figures go")
    subsets = _subset_analysis(ctx, subset_scores, subset_size, subset_seeds, subset_score)
    factors = analyze_factors(study_from_table(read_score_table(factor_scores))) if factor_scores else None
    reading = Reading.of({**ctx.params, "metric": None})  # --metric is the score column of score tables here
    console = output_console()
    if reading.holds_run_scores(paths):
        if factors is not None or subsets is not None or unstable_csv is not None:
            raise SeedscopeError("per-run score tables make a report of their own: --factor-scores, --subset-scores and "
                                 "--unstable-csv need predictions")
        report_scores(paths, reading, files, metric=metric, title=title)
        print_notes(console, ignored_options(ctx, UNUSED_BY_SCORE_TABLES))
        files.print_written(console)
        return
    print_notes(console, ignored_options(ctx, UNUSED_BY_PREDICTIONS))
    report_predictions(paths, reading, files, console, factors=factors, subsets=subsets, top=top,
                       intersect=intersect, title=title)
    files.print_written(console)


@dataclass(frozen=True)
class ReportFiles:
    """Where the report goes: the HTML page, the paper tables, the figures (and their format), the unstable examples;
    the HTML page alone when nothing is named."""

    html: Path | None
    tables: Path | None
    figures: Path | None
    fig_format: str
    unstable_csv: Path | None

    def __post_init__(self) -> None:
        if self.html is None and self.tables is None and self.figures is None and self.unstable_csv is None:
            object.__setattr__(self, "html", DEFAULT_HTML)

    def print_written(self, console: Console) -> None:
        for label, path in (("HTML report", self.html), ("paper tables", self.tables), ("figures", self.figures),
                            ("unstable examples", self.unstable_csv)):
            if path is not None:
                console.print(f"wrote {label}: {path}", highlight=False, markup=False)


def report_scores(paths: list[Path], reading: Reading, files: ReportFiles, *, metric: str | None, title: str) -> None:
    """The report of per-run score tables."""
    from seedscope.workflows.reporting import build_score_report

    build_score_report(paths, html=files.html, latex_dir=files.tables, figures_dir=files.figures,
                       fig_format=files.fig_format, metric=metric, task=reading.options.task, title=title,
                       read_options={"run_column": reading.options.run_column, "system_columns": reading.system_columns,
                                     "fmt": reading.format, "scale": reading.scale})


def report_predictions(paths: list[Path], reading: Reading, files: ReportFiles, console: Console, **options) -> None:
    """The report of predictions (``options``: factors, subsets, top, intersect, title), its notes printed."""
    from seedscope.progress import stage_progress
    from seedscope.workflows.reporting import build_report

    options["top_k"] = options.pop("top")
    with stage_progress() as progress:
        report = build_report([str(p) for p in paths], html=files.html, latex_dir=files.tables,
                              figures_dir=files.figures, fig_format=files.fig_format, unstable_csv=files.unstable_csv,
                              task=reading.options.task, data_dir=reading.options.data_dir, progress=progress,
                              read_options={"format": reading.format, "options": reading.options}, **options)
    print_notes(console, report.notes)


def _subset_analysis(ctx: typer.Context, paths: list[Path] | None, size: int | None, n_seeds: int, score: str | None):
    """The subset-seed analysis of ``--subset-scores``, read and computed as ``seedscope subsets`` does
    (the full-pool CIs and tests are skipped: the report does not show them); None without the option."""
    from seedscope.analysis.subsets import (
        analyze_subsets,
        check_subset_size,
        parse_score,
    )
    from seedscope.io import read_system_scores

    if not paths:
        given = [f"--{name.replace('_', '-')}" for name in ("subset_size", "subset_seeds", "subset_score")
                 if getattr(ctx.get_parameter_source(name), "name", None) == "COMMANDLINE"]
        if given:
            raise SeedscopeError(f"{given[0]} needs --subset-scores FILE to say which scores to draw the subsets from")
        return None
    if size is None:
        raise SeedscopeError("--subset-scores needs --subset-size N, the number of examples in each subset")
    check_subset_size(size, pool_size=size)  # n ≥ 1 now; n ≤ N once the scores are read
    if n_seeds < 2:
        raise SeedscopeError(f"--subset-seeds must be at least 2 to measure a seed variance, not {n_seeds}")
    spec = parse_score(score or "mean")
    table = read_system_scores(paths, columns=spec.columns, numeric=spec.numeric_columns)
    return analyze_subsets(table, subset_size=size, n_seeds=n_seeds, score=spec, full_pool=False)


def register(app: typer.Typer) -> None:
    """Add ``seedscope report`` to the main app."""
    app.command("report", help=HELP, no_args_is_help=True, cls=renamed(RENAMES))(report_command)
