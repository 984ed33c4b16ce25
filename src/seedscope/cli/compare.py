"""``seedscope compare``: seed-level comparison of two or more sweeps on one metric."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from seedscope.cli.inputs import (
    FILTER_OPTION,
    FORMAT_OPTION,
    ID_COLUMN_OPTION,
    LABEL_COLUMN_OPTION,
    PREDICTION_COLUMN_OPTION,
    RUN_COLUMN_OPTION,
    RUNS_BY_OPTION,
    SCALE_OPTION,
    SCORE_TABLES,
    SYSTEM_COLUMN_OPTION,
    PREDICTIONS,
    check_power,
    ignored_options,
)
from seedscope.cli.outputs import check_outputs, emit_sections, output_console, tidy_sections
from seedscope.cli.subsets import CONFIDENCE_OPTION, CSV_OPTION, JSON_OPTION, LATEX_OPTION, MARKDOWN_OPTION
from seedscope.errors import SeedscopeError

COMPARE_HELP = """Seed-level comparison of two or more sweeps (S seeds each) on one metric.

Reports per system the mean, IQM and a bootstrap CI; per pair the mean difference with a
bootstrap CI over seeds (paired when the run names match), the probability of improvement,
almost stochastic order (ε_min both ways), a paired permutation test on matched seeds, the
joint seed × example bootstrap and per-seed McNemar tests (classification with gold labels),
with Holm and Bonferroni adjustments when several pairs are compared; and per system the
expected best score of n runs and how the CI widths of the mean and of VAR shrink with the
number of seeds.

Each SWEEP is an experiment directory from `seedscope sweep`, a prediction table with a run
column, or a folder of per-run prediction files. Runs with the same name in two sweeps are
matched seeds.

Per-run score tables work too (one row per run: `model, seed, acc`, or one column per system;
one file may hold every system): the per-run statistics are the same, the per-example tests
(joint bootstrap, McNemar) are skipped because they need per-example predictions. Runs are
matched seeds only through a run / seed column; without one, the comparison is unpaired.

\b
Examples:

```
seedscope compare runs/bert runs/roberta
seedscope compare base.csv lora.csv --metric mcc --json compare.json
seedscope compare a/ b/ c/ --names A --names B --names C --markdown compare.md
seedscope compare paper_seeds.csv --metric acc --seed-column seed
```
"""

#: options a per-run score table cannot use, and options per-example predictions cannot use
UNUSED_BY_SCORE_TABLES = {name: SCORE_TABLES for name in (
    "id_column", "prediction_column", "label_column", "lm_eval_filter", "runs_by")}
UNUSED_BY_PREDICTIONS = {"system_column": PREDICTIONS, "scale": PREDICTIONS}


def compare_command(
    ctx: typer.Context,
    sweeps: list[Path] = typer.Argument(..., help="Two or more sweeps (experiment directories, prediction tables, folders of per-run files), or per-run score tables."),
    names: Optional[list[str]] = typer.Option(None, "--names", help="Display name of a sweep, repeated once per sweep in order (--names A --names B); default: the path names."),
    metric: Optional[str] = typer.Option(None, help="Per-run metric to compare (accuracy, f1_macro, mcc, pearson …, or a score table's column); default: the task's primary one."),
    task: Optional[str] = typer.Option(None, help="Task to read from multi-task stores or tables."),
    input_format: Optional[str] = FORMAT_OPTION,
    run_column: Optional[str] = RUN_COLUMN_OPTION,
    id_column: Optional[str] = ID_COLUMN_OPTION,
    prediction_column: Optional[str] = PREDICTION_COLUMN_OPTION,
    label_column: Optional[str] = LABEL_COLUMN_OPTION,
    system_column: Optional[list[str]] = SYSTEM_COLUMN_OPTION,
    scale: Optional[float] = SCALE_OPTION,
    lm_eval_filter: Optional[str] = FILTER_OPTION,
    runs_by: Optional[str] = RUNS_BY_OPTION,
    n_boot: int = typer.Option(10_000, help="Bootstrap resamples (CIs, ASO, joint bootstrap, seeds needed)."),
    n_permutations: int = typer.Option(9999, help="Sign flips of the paired permutation test (exact when 2^S is smaller)."),
    confidence: float = CONFIDENCE_OPTION,
    seed: int = typer.Option(0, min=0, help="Seed of every resampling."),
    power: float = typer.Option(0.8, help="Power of each pair's minimum detectable difference (mdd)."),
    json_file: Optional[Path] = JSON_OPTION,
    markdown_file: Optional[Path] = MARKDOWN_OPTION,
    latex_file: Optional[Path] = LATEX_OPTION,
    csv_file: Optional[Path] = CSV_OPTION,
) -> None:
    from seedscope.analysis.compare import compare_sweeps, compare_systems
    from seedscope.io import holds_run_scores, read_run_scores, read_sweep
    from seedscope.report.tables import comparison_sections

    check_outputs(json_file, markdown_file, latex_file, csv_file)
    check_power(power)
    from seedscope.metrics.resampling import check_confidence

    check_confidence(confidence)  # before any input is read, whatever its kind
    console = output_console()
    settings = dict(n_boot=n_boot, n_permutations=n_permutations, confidence=confidence, seed=seed, power=power)
    if holds_run_scores(sweeps, input_format):
        ignored = ignored_options(ctx, UNUSED_BY_SCORE_TABLES)
        scores = read_run_scores(sweeps, run_column=run_column, metric=metric, system_columns=system_column, task=task,
                                 fmt=input_format, names=names if names and len(names) == len(sweeps) else None,
                                 scale=scale)
        per_run, chosen = scores.series(metric)
        with console.status("comparing…"):
            comparison = compare_systems(per_run, metric=chosen, paired=None if scores.paired else False, **settings)
        comparison.notes = scores.notes + ignored + [
            "per-run score tables: the per-example tests (joint seed × example bootstrap, McNemar) need per-example "
            "predictions and are skipped"
        ] + comparison.notes
    else:
        for note in ignored_options(ctx, UNUSED_BY_PREDICTIONS):
            console.print(f"note: {note}", highlight=False)
        options = dict(format=input_format, task=task, run_column=run_column, id_column=id_column,
                       prediction_column=prediction_column, label_column=label_column, filter=lm_eval_filter,
                       runs_by=runs_by)
        with console.status("reading sweeps…"):
            if len(sweeps) == 1:  # one store (or table) holding several models: each model is a system
                tables_by_name = _systems_of_one_input(read_sweep(sweeps[0], **options), sweeps[0])
            else:
                labels = _sweep_names(sweeps, names)
                tables_by_name = {label: read_sweep(path, **options) for label, path in zip(labels, sweeps)}
        with console.status("comparing…"):
            comparison = compare_sweeps(tables_by_name, metric=metric, **settings)
    sections = comparison_sections(comparison)
    emit_sections(console, sections, comparison.to_dict(), tidy_sections(sections), json_file, markdown_file,
                  latex_file, csv_file)
    for note in comparison.notes:
        console.print(f"note: {note}")


def _systems_of_one_input(table, path: Path) -> dict:
    """The models of one input as systems (a demo's store: fine-tuned and prompted), one task at a time."""
    models = list(dict.fromkeys(table["model"])) if "model" in getattr(table, "columns", ()) else []
    if len(models) < 2:
        raise SeedscopeError(f"compare needs at least two sweeps, or one input holding two or more models; {path} "
                             "holds one (or is one score table with one system)")
    if "task" in table.columns and table["task"].nunique() > 1:
        raise SeedscopeError(f"{path} holds several tasks ({', '.join(map(str, table['task'].unique()[:5]))}); "
                             "pick one with --task")
    return {model: rows.drop(columns="model") for model, rows in table.groupby("model", sort=False)}


def _sweep_names(paths: list[Path], names: list[str] | None) -> list[str]:
    from seedscope.io.common import run_names

    return run_names(paths, tuple(names) if names else None)


def register(app: typer.Typer) -> None:
    """Add ``seedscope compare`` to the main app."""
    app.command("compare", help=COMPARE_HELP, no_args_is_help=True)(compare_command)
