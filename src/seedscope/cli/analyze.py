"""``seedscope analyze``: macro and micro seed effects of predictions you already have."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Optional

import typer

from seedscope.cli.inputs import (
    CLUSTER_COLUMN_OPTION,
    FILTER_OPTION,
    FORMAT_OPTION,
    ID_COLUMN_OPTION,
    LABEL_COLUMN_OPTION,
    METRIC_OPTION,
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
from seedscope.cli.outputs import check_outputs, output_console, write_outputs
from seedscope.serialize import dumps

HELP = """Macro (mean, VAR, sample std, CV, bootstrap and t CI) and micro (CON, CCON) seed effects
of the predictions of several runs of one model on the same examples; per run the accuracy's
standard error over examples (clustered with --cluster-column), the split of its variance into
a seed part and an example-sampling part, the minimum detectable difference, and the
degenerate runs (one class only, or at or below the majority-class baseline).

PATH is one file per run (CSV, TSV, JSONL, Parquet; the run is named after the file), a folder
of such files (each file directly inside it one run), one long table with a run column, a seed
directory, an lm-evaluation-harness --log_samples output, or an experiment directory from
`seedscope sweep`. Every number is a fraction in [0, 1].

A per-run score table (one row per run, no example ids: `model, seed, acc`, or a wide table
with one column per system) gets the macro part, per system: mean, VAR, std, CV, bootstrap
and t CIs, IQM with its CI. Spreadsheet summary rows (Mean, Standard deviation …) are skipped.

\b
Examples:

```
seedscope analyze examples/rte/*.csv
seedscope analyze predictions.csv --run-column seed --label-column gold --json result.json
seedscope analyze runs/ --intersect --markdown table.md --latex table.tex
seedscope analyze stsb_seed*.jsonl --task-type regression --primary-metric spearman
seedscope analyze paper_seeds.csv --metric acc --seed-column seed
seedscope analyze logs/*template-*.jsonl --runs-by file --task boolq
```
"""


class TaskTypeChoice(str, Enum):
    classification = "classification"
    regression = "regression"


#: options a per-run score table cannot use (it has no per-example predictions)
UNUSED_BY_SCORE_TABLES = {name: SCORE_TABLES for name in (
    "id_column", "prediction_column", "label_column", "cluster_column", "prob_columns", "lm_eval_filter", "runs_by",
    "data_dir", "task_type", "intersect", "primary_metric", "top", "power")}
#: options per-example predictions cannot use (``--metric`` picks an inspect_ai scorer, and is used there)
UNUSED_BY_PREDICTIONS = {"system_column": PREDICTIONS, "scale": PREDICTIONS}


def analyze_command(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="Prediction files or directories (one run each, or one long table)."),
    run_column: Optional[str] = RUN_COLUMN_OPTION,
    id_column: Optional[str] = ID_COLUMN_OPTION,
    prediction_column: Optional[str] = PREDICTION_COLUMN_OPTION,
    label_column: Optional[str] = LABEL_COLUMN_OPTION,
    cluster_column: Optional[str] = CLUSTER_COLUMN_OPTION,
    metric: Optional[str] = METRIC_OPTION,
    system_column: Optional[list[str]] = SYSTEM_COLUMN_OPTION,
    scale: Optional[float] = SCALE_OPTION,
    prob_columns: Optional[str] = typer.Option(
        None, help="Prefix (or list-valued column) of the class-probability columns; default: prob_<class>."
    ),
    lm_eval_filter: Optional[str] = FILTER_OPTION,
    runs_by: Optional[str] = RUNS_BY_OPTION,
    input_format: Optional[str] = FORMAT_OPTION,
    task: Optional[str] = typer.Option(None, help="Task name (e.g. rte, sst2), to join gold labels to run_glue.py predictions."),
    data_dir: Optional[Path] = typer.Option(None, help="Folder with the task's labelled files (default $SEEDSCOPE_DATA_DIR)."),
    task_type: Optional[TaskTypeChoice] = typer.Option(
        None, help="classification or regression; default: regression when predictions are non-integer floats."
    ),
    intersect: bool = typer.Option(False, help="Use only the example ids that every run covers, and report how many were dropped."),
    primary_metric: Optional[str] = typer.Option(
        None, help="ζ of the summary (and of regression CCON): accuracy, f1_macro, mcc, pearson, spearman …"
    ),
    top: int = typer.Option(10, min=0, help="How many of the most unstable examples to list."),
    n_boot: int = typer.Option(10_000, min=1, help="Bootstrap resamples for the CI of the mean."),
    confidence: float = typer.Option(0.95, min=0.0, max=1.0, help="Confidence level of the bootstrap CI."),
    seed: int = typer.Option(0, min=0, help="Seed of the bootstrap resampling."),
    power: float = typer.Option(0.8, help="Power of the minimum detectable difference (with the confidence level as 1 − α)."),
    json_file: Optional[Path] = typer.Option(None, "--json", help="Write every number as JSON (schema: docs/analyze.md)."),
    markdown_file: Optional[Path] = typer.Option(None, "--markdown", help="Write the tables as Markdown."),
    latex_file: Optional[Path] = typer.Option(None, "--latex", help="Write the tables as LaTeX (booktabs)."),
    csv_file: Optional[Path] = typer.Option(None, "--csv", help="Write every number as a tidy CSV (group, section, name, statistic, value)."),
) -> None:
    from seedscope.analysis.seed_effects import analyze, analyze_groups
    from seedscope.analysis.summary import summarize_tasks
    from seedscope.io import attach_prompts, attach_texts, read_aligned_runs, read_predictions
    from seedscope.report import tables

    check_outputs(json_file, markdown_file, latex_file, csv_file)
    check_power(power)
    from seedscope.metrics.resampling import check_confidence

    check_confidence(confidence)  # before any input is read, whatever its kind
    console = output_console()
    from seedscope.io import holds_run_scores

    if holds_run_scores(paths, input_format):
        _analyze_run_scores(paths, console, input_format, run_column, metric, system_column, task, n_boot, confidence,
                            seed, json_file, markdown_file, latex_file, csv_file, scale,
                            ignored_options(ctx, UNUSED_BY_SCORE_TABLES))
        return
    for note in ignored_options(ctx, UNUSED_BY_PREDICTIONS):
        console.print(f"note: {note}", highlight=False)
    read = dict(
        format=input_format,
        run_column=run_column,
        id_column=id_column,
        prediction_column=prediction_column,
        label_column=label_column,
        cluster_column=cluster_column,
        prob_columns=prob_columns,
        task=task,
        task_type=task_type.value if task_type else None,
        data_dir=data_dir,
        filter=lm_eval_filter,
        runs_by=runs_by,
        metric=metric,
    )
    options = dict(
        task_type=task_type.value if task_type else None,
        intersect=intersect,
        primary_metric=primary_metric,
        n_boot=n_boot,
        confidence=confidence,
        seed=seed,
        power=power,
    )
    with console.status("reading predictions…"):
        # one plain file per run: aligned codes straight from pyarrow; anything else: the long table
        aligned = None if intersect else read_aligned_runs(paths, **read)
        table = read_predictions(paths, **read) if aligned is None else None
    if table is not None:
        reader_notes = list(table.attrs.get("notes", []))
        table, prompt_notes = attach_prompts(table, paths)
        table, text_notes = attach_texts(table, data_dir, task=task)
        for note in reader_notes + prompt_notes + text_notes:
            console.print(note, highlight=False)
    with console.status("analysing…"):
        results = analyze_groups(table, **options) if table is not None else {(None, None): analyze(aligned, **options)}
        summary = summarize_tasks(
            {_label(key): result for key, result in results.items()}
        ) if len(results) > 1 else None

    sections: dict = {}
    for key, result in results.items():
        prefix = f"{_label(key)}: " if len(results) > 1 else ""
        sections.update({prefix + title: frame for title, frame in tables.analysis_sections(result, top).items()})
    if summary is not None:
        sections.update(tables.summary_sections(summary))

    # Render everything before writing anything, so an error leaves no file behind.
    outputs = {}
    if json_file:
        outputs[json_file] = dumps(_json(results, summary, top))
    if markdown_file:
        outputs[markdown_file] = tables.render_markdown(sections)
    if latex_file:
        outputs[latex_file] = tables.render_latex(sections)
    if csv_file:
        outputs[csv_file] = tables.to_csv(_long(results).set_index("group"))

    for title, frame in sections.items():
        console.print(tables.to_rich(frame, title=title))
    for result in results.values():
        if result.aligned.n_dropped:
            console.print(f"--intersect dropped {result.aligned.n_dropped} example(s) not covered by every run")
    write_outputs(outputs, console)


def _analyze_run_scores(paths, console, fmt, run_column, metric, system_column, task, n_boot, confidence, seed,
                        json_file, markdown_file, latex_file, csv_file, scale, ignored) -> None:
    """The macro part for per-run score tables, with the note that the micro part needs predictions."""
    from seedscope.analysis.run_scores import NEEDS_PREDICTIONS, analyze_run_scores
    from seedscope.cli.outputs import emit_sections, tidy_sections
    from seedscope.io import read_run_scores
    from seedscope.report.tables import score_sections

    scores = read_run_scores(paths, run_column=run_column, metric=_split(metric), system_columns=system_column,
                             task=task, fmt=fmt, scale=scale)
    summaries = analyze_run_scores(scores.table, scores.metrics, n_boot=n_boot, confidence=confidence, seed=seed)
    sections = score_sections(summaries, confidence)
    notes = scores.notes + ignored + [NEEDS_PREDICTIONS]
    document = {"input": "run_scores", "units": "as given", "confidence": confidence, "paired_runs": scores.paired,
                "groups": [summary.to_dict() for summary in summaries], "notes": notes}
    emit_sections(console, sections, document, tidy_sections(sections), json_file, markdown_file, latex_file, csv_file)
    for note in notes:
        console.print(f"note: {note}", highlight=False)


def _split(text: str | None) -> list[str] | None:
    """``"acc,f1"`` → ``["acc", "f1"]``."""
    return None if text is None else [part.strip() for part in text.split(",") if part.strip()]


def _label(key: tuple) -> str:
    """'task / model' for a group key, leaving out parts that are absent."""
    parts = [str(part) for part in key if part is not None]
    return " / ".join(parts) or "predictions"


def _json(results: dict, summary, top: int) -> dict:
    if len(results) == 1:
        return next(iter(results.values())).to_dict(top)

    groups = [{"task": key[0], "model": key[1], **result.to_dict(top)} for key, result in results.items()]
    out = {"groups": groups}
    if summary is not None:
        out["summary"] = {
            "table1": summary.table1.to_dict(),
            "size_correlation": summary.correlation.to_dict(orient="index"),
        }
    return out


def _long(results: dict):
    import pandas as pd

    from seedscope.report.tables import analysis_long

    frames = [analysis_long(result).assign(group=_label(key)) for key, result in results.items()]
    return pd.concat(frames, ignore_index=True)[["group", "section", "name", "statistic", "value"]]


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command("analyze", help=HELP, no_args_is_help=True)(analyze_command)

