"""``seedscope compare``: seed-level comparison of two or more sweeps on one metric."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from seedscope.cli.inputs import (
    PREDICTIONS,
    SCORE_TABLES,
    IdColumn,
    InputFormat,
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
from seedscope.cli.outputs import (
    N_BOOT,
    N_PERMUTATIONS,
    Boot,
    Confidence,
    CsvFile,
    Details,
    JsonFile,
    LatexFile,
    MarkdownFile,
    OutputFiles,
    Permutations,
    Power,
    output_console,
    print_notes,
    seed_option,
)
from seedscope.cli.vocabulary import ADVANCED, renamed
from seedscope.errors import SeedscopeError

if TYPE_CHECKING:
    from rich.console import Console

COMPARE_HELP = """Seed-level comparison of two or more sweeps (S seeds each) on one metric.

Which system is better, and does that survive the seed? Per system the mean over its seeds
with a bootstrap interval; per pair the mean difference with its interval, the probability of
improvement, almost stochastic order (ASO), a paired permutation test on matched seeds (runs
with the same name in two sweeps), the joint seed × example bootstrap and McNemar's test per
seed (with per-example predictions), Holm-adjusted over pairs; and how many seeds a claim needs.

Each SWEEP is an experiment directory of `seedscope sweep`, a prediction table with a run
column, a folder of per-run prediction files, or a per-run score table (one row per run:
model, seed, acc; one file may hold every system). Sample tables (several sampled answers
per item, one file per system) are compared on one estimator (pass@1 …).
docs/how-to/compare.md explains every number.

\b
Examples:

```
seedscope compare <sweep-a>/ <sweep-b>/ --json compare.json
seedscope compare <base>.csv <lora>.csv --metric mcc --names A --names B
seedscope compare <lm-eval-out>/b1 <lm-eval-out>/b128 --implementations
```
"""

#: options a per-run score table cannot use, and options per-example predictions cannot use
UNUSED_BY_SCORE_TABLES = {name: SCORE_TABLES for name in (
    "id_column", "prediction_column", "label_column", "lm_eval_filter", "runs_by", "implementations")}
UNUSED_BY_PREDICTIONS = {"system_column": PREDICTIONS, "scale": PREDICTIONS}
#: options sample tables do not use: their columns are named by contract, and their comparison resamples nothing
UNUSED_BY_SAMPLES = {name: "sample tables (their columns are named by contract; the paired comparison is analytic)"
                     for name in ("run_column", "id_column", "prediction_column", "label_column", "system_column", "scale",
                                  "lm_eval_filter", "runs_by", "task", "n_boot", "n_permutations", "seed",
                                  "implementations")}


#: --metric of compare: what it names for each kind of input
METRIC_CHOICES = ("accuracy, f1_macro, mcc, pearson … of each run (default: the task's primary metric), a per-run "
                  "score table's column, or a sampling estimator of sample tables (pass@1, pass@4, maj@8 …; default pass@1)")
ComparedMetric = metric_option(METRIC_CHOICES)
Names = Annotated[Optional[list[str]], typer.Option(
    "--names", metavar="NAME",
    help="Display name of a sweep, once per sweep in order (--names A --names B); default: the path names.")]
Implementations = Annotated[bool, typer.Option(
    "--implementations", rich_help_panel=ADVANCED,
    help="The inputs are implementations of one system: each sweep is one (lm-eval output at batch 1 and at batch "
    "128, say), and the measures between them are added seed by seed: flip rate, |Δ log p|, the rerun and seed "
    "floors, the bug rule (docs/how-to/implementation.md).")]
CompareSeed = seed_option("the bootstrap resamples and the permutations")


def compare_command(
    ctx: typer.Context,
    sweeps: list[Path] = typer.Argument(..., metavar="SWEEPS", show_default=False,
                                        help="Two or more sweeps (folders, prediction tables), or per-run score tables."),
    names: Names = None,
    metric: ComparedMetric = None,
    details: Details = False,
    json_file: JsonFile = None,
    csv_file: CsvFile = None,
    markdown_file: MarkdownFile = None,
    latex_file: LatexFile = None,
    task: Task = None,
    implementations: Implementations = False,
    input_format: InputFormat = None,
    run_column: RunColumn = None,
    id_column: IdColumn = None,
    prediction_column: PredictionColumn = None,
    label_column: LabelColumn = None,
    system_column: SystemColumn = None,
    scale: Scale = None,
    lm_eval_filter: LmEvalFilter = None,
    runs_by: RunsBy = None,
    n_boot: Boot = N_BOOT,
    n_permutations: Permutations = N_PERMUTATIONS,
    confidence: Confidence = 0.95,
    seed: CompareSeed = 0,
    power: Power = 0.8,
) -> None:
    from seedscope.analysis.compare import compare_sweeps
    from seedscope.report.tables import compact_comparison, comparison_sections
    from seedscope.report.verdict import comparison_lines

    outputs = OutputFiles.of(ctx.params)  # checked, with the confidence level and power, before any input is read
    reading = Reading.of({**ctx.params, "metric": None})  # --metric is the compared metric here, not a scorer
    console = output_console()
    settings = dict(n_boot=n_boot, n_permutations=n_permutations, confidence=confidence, seed=seed, power=power)
    if reading.holds_sample_tables(sweeps):
        print_notes(console, ignored_options(ctx, UNUSED_BY_SAMPLES))
        compare_sample_tables(console, sweeps, reading, outputs, metric, names, confidence, power, details)
        return
    if reading.holds_run_scores(sweeps):
        comparison = compare_scores(console, sweeps, reading, metric, names, settings,
                                    ignored_options(ctx, UNUSED_BY_SCORE_TABLES))
    else:
        print_notes(console, ignored_options(ctx, UNUSED_BY_PREDICTIONS))
        with console.status("reading sweeps…"):
            tables_by_name, notes = read_systems(sweeps, reading, names)
        print_notes(console, notes, prefix="")
        if implementations:
            emit_with_implementations(console, outputs, tables_by_name, metric, settings, details)
            return
        with console.status("comparing…"):
            comparison = compare_sweeps(tables_by_name, metric=metric, **settings)
    outputs.emit(console, comparison_sections(comparison), comparison.to_dict(), notes=comparison.notes,
                 verdict=comparison_lines(comparison), compact=compact_comparison(comparison), details=details)


def emit_with_implementations(console: Console, outputs: OutputFiles, tables_by_name: dict, metric: str | None,
                              settings: dict, details: bool = False) -> None:
    """The measures between the sweeps taken as implementations of one system, seed by seed, and the seed-level
    comparison beside them where every sweep has two runs or more."""
    from seedscope.analysis.compare import compare_sweeps
    from seedscope.analysis.implementation import compare_implementations, sweeps_as_implementations
    from seedscope.report.implementation import bug_notes, implementation_sections
    from seedscope.report.tables import compact_comparison, comparison_sections
    from seedscope.report.verdict import comparison_lines

    verdict, compact = [], {}
    with console.status("comparing…"):
        study = compare_implementations(sweeps_as_implementations(tables_by_name), confidence=settings["confidence"],
                                        n_boot=settings["n_boot"], seed=settings["seed"])
        if study is None:
            raise SeedscopeError("--implementations compares sweeps of one task and system: these share no task")
        sections = implementation_sections(study)
        document = {"implementation": study.to_dict(), "implementation_notes": study.notes}
        notes = study.notes + bug_notes(study)
        if min(table["run"].nunique() for table in tables_by_name.values()) >= 2:
            comparison = compare_sweeps(tables_by_name, metric=metric, **settings)
            sections, notes = {**comparison_sections(comparison), **sections}, list(comparison.notes) + notes
            document = {**comparison.to_dict(), **document}
            verdict, compact = comparison_lines(comparison), compact_comparison(comparison)
        else:
            notes = ["the seed-level comparison needs two runs (seeds) per sweep; the implementations are compared "
                     "run by run"] + notes
    outputs.emit(console, sections, document, notes=notes, verdict=verdict,
                 compact={**compact, **implementation_sections(study)}, details=details)


def compare_sample_tables(console: Console, paths: list[Path], reading: Reading, outputs: OutputFiles,
                          metric: str | None, names: list[str] | None, confidence: float, power: float,
                          details: bool = False) -> None:
    """Sample tables, one system each: the paired comparison on one sampling estimator (--metric, default pass@1)."""
    from seedscope.analysis.sampled_compare import compare_samples
    from seedscope.io import read_sample_tables
    from seedscope.report.sampling import sampled_comparison_sections
    from seedscope.report.verdict import sampled_comparison_lines

    with console.status("reading samples…"):
        tables = {name: read_sample_tables([path], reading.format) for name, path in zip(_sweep_names(paths, names), paths)}
    with console.status("comparing…"):
        comparison = compare_samples(tables, estimator=metric or "pass@1", confidence=confidence, power=power)
    sections = sampled_comparison_sections(comparison)
    outputs.emit(console, sections, comparison.to_dict(), notes=comparison.notes,
                 verdict=sampled_comparison_lines(comparison), compact=dict(list(sections.items())[:2]), details=details)


def compare_scores(console: Console, paths: list[Path], reading: Reading, metric: str | None,
                   names: list[str] | None, settings: dict, ignored: list[str]):
    """The comparison of the systems of per-run score tables (the per-example tests skipped, and said; the options
    that do not apply, ``ignored``, noted)."""
    from seedscope.analysis.compare import compare_systems

    scores = reading.run_scores(paths, metric=metric, names=names if names and len(names) == len(paths) else None)
    per_run, chosen = scores.series(metric)
    with console.status("comparing…"):
        comparison = compare_systems(per_run, metric=chosen, paired=None if scores.paired else False, **settings)
    comparison.notes = scores.notes + ignored + [
        "per-run score tables: the per-example tests (joint seed × example bootstrap, McNemar) need per-example "
        "predictions and are skipped"
    ] + comparison.notes
    return comparison


def read_systems(paths: list[Path], reading: Reading, names: list[str] | None) -> tuple[dict, list[str]]:
    """(System name → its predictions, the readers' notes): one system per sweep, or the models of a single input."""
    tables, notes = reading.sweeps(paths, _sweep_names(paths, names))
    if len(paths) == 1:  # one store (or table) holding several models: each model is a system
        return _systems_of_one_input(next(iter(tables.values())), paths[0]), notes
    for path, table in zip(paths, tables.values()):
        _one_task(table, path)
    return tables, notes


def _one_task(table, path: Path) -> None:
    """A system is compared on one task: an input holding several (a demo's store: SST-2 and STS-B) needs --task."""
    if "task" in getattr(table, "columns", ()) and table["task"].nunique() > 1:
        raise SeedscopeError(f"{path} holds several tasks ({', '.join(map(str, table['task'].unique()[:5]))}); "
                             "pick one with --task")


def _systems_of_one_input(table, path: Path) -> dict:
    """The models of one input as systems (a demo's store: fine-tuned and prompted), one task at a time."""
    models = list(dict.fromkeys(table["model"])) if "model" in getattr(table, "columns", ()) else []
    if len(models) < 2:
        raise SeedscopeError(f"compare needs at least two sweeps, or one input holding two or more models; {path} "
                             "holds one (or is one score table with one system)")
    _one_task(table, path)
    return {model: rows.drop(columns="model") for model, rows in table.groupby("model", sort=False)}


def _sweep_names(paths: list[Path], names: list[str] | None) -> list[str]:
    from seedscope.io.common import run_names

    return run_names(paths, tuple(names) if names else None)


def register(app: typer.Typer) -> None:
    """Add ``seedscope compare`` to the main app."""
    app.command("compare", help=COMPARE_HELP, no_args_is_help=True, cls=renamed(READING_RENAMES))(compare_command)
