"""``seedscope analyze``: macro and micro seed effects of predictions you already have."""

from __future__ import annotations

import importlib
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from seedscope import parquet_ahead
from seedscope.cli.inputs import (
    PREDICTIONS,
    SCORE_TABLES,
    ClusterColumn,
    DataDir,
    EpochsAs,
    IdColumn,
    InputFormat,
    Intersect,
    LabelColumn,
    LmEvalFilter,
    Metric,
    PredictionColumn,
    ProbColumns,
    Reading,
    RunColumn,
    RunsBy,
    Scale,
    SystemColumn,
    Task,
    TaskType,
    ignored_options,
)
from seedscope.cli.outputs import (
    Boot,
    Confidence,
    CsvFile,
    JsonFile,
    Ks,
    LatexFile,
    MarkdownFile,
    OutputFiles,
    Power,
    Seed,
    Top,
    output_console,
    parse_int_list,
    print_notes,
)

if TYPE_CHECKING:
    from rich.console import Console

    from seedscope.analysis.summary import TaskSummary

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

A sample table (a table with `sample` and `correct` columns: several sampled answers per item,
one run per sampling seed) gets the sampling estimators — pass@k, pass^k, maj@k (with a
prediction column), G-Pass@k at τ = 0.25, 0.5, 0.75, 1 and mG-Pass@k for k = 1, 2, 5, 10 … up to n
(or --k 1,4,16), and avg@n — each with its spread across sampling seeds, its standard error over
items (sampling variance included), the stability of the samples (CON, CCON) and how many items
and samples a target interval needs (docs/sampling.md). The sampled generations of inspect_ai
logs (epochs), lighteval details (n per document) and lm-eval --log_samples output (repeats) get
the same analysis when it is asked for, with --k or --epochs-as samples.

\b
Examples:

```
seedscope analyze examples/rte/*.csv
seedscope analyze predictions.csv --run-column seed --label-column gold --json result.json
seedscope analyze runs/ --intersect --markdown table.md --latex table.tex
seedscope analyze stsb_seed*.jsonl --task-type regression --primary-metric spearman
seedscope analyze paper_seeds.csv --metric acc --seed-column seed
seedscope analyze logs/*template-*.jsonl --runs-by file --task boolq
seedscope analyze samples.parquet --k 1,4,16 --json sampling.json
seedscope analyze logs/*.eval --k 1,2,4                      # inspect_ai --epochs 4: pass@k per log
seedscope analyze lm-eval-out/ --task my_task --k 1,4 --filter vote   # lm-eval repeats
```
"""

#: options a per-run score table cannot use (it has no per-example predictions)
UNUSED_BY_SCORE_TABLES = {name: SCORE_TABLES for name in (
    "id_column", "prediction_column", "label_column", "cluster_column", "prob_columns", "lm_eval_filter", "runs_by", "epochs_as",
    "data_dir", "task_type", "intersect", "primary_metric", "top", "power")}
#: options per-example predictions cannot use (``--metric`` picks an inspect_ai scorer, and is used there)
UNUSED_BY_PREDICTIONS = {"system_column": PREDICTIONS, "scale": PREDICTIONS}
#: options a sample table cannot use (its columns are named by the sample table's contract), and why --k is not used
SAMPLES = "sample tables (run, example_id, sample, correct, prediction: named by their contract)"
UNUSED_BY_SAMPLES = {name: SAMPLES for name in (
    "run_column", "id_column", "prediction_column", "label_column", "cluster_column", "metric", "system_column",
    "scale", "prob_columns", "lm_eval_filter", "runs_by", "task", "data_dir", "task_type", "intersect",
    "primary_metric", "power")}
#: framework logs read as samples (:func:`seedscope.io.read_samples`) pick their scorer, filter and task
UNUSED_BY_LOGGED_SAMPLES = {name: why for name, why in UNUSED_BY_SAMPLES.items() if name not in ("metric", "lm_eval_filter", "task")}
#: a table longer than this (per run, at thousands of runs) is one line in the terminal; the files hold every row
TERMINAL_ROWS = 500
SAMPLE_TABLES_ONLY = "these inputs (it picks the ks of sample tables, which hold several samples per item)"


def analyze_command(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., help="Prediction files or directories (one run each, or one long table)."),
    run_column: RunColumn = None,
    id_column: IdColumn = None,
    prediction_column: PredictionColumn = None,
    label_column: LabelColumn = None,
    cluster_column: ClusterColumn = None,
    metric: Metric = None,
    system_column: SystemColumn = None,
    scale: Scale = None,
    prob_columns: ProbColumns = None,
    lm_eval_filter: LmEvalFilter = None,
    runs_by: RunsBy = None,
    epochs_as: EpochsAs = None,
    input_format: InputFormat = None,
    task: Task = None,
    data_dir: DataDir = None,
    task_type: TaskType = None,
    intersect: Intersect = False,
    primary_metric: Optional[str] = typer.Option(
        None, help="ζ of the summary (and of regression CCON): accuracy, f1_macro, mcc, pearson, spearman …"
    ),
    top: Top = 10,
    k: Ks = None,
    implementations: bool = typer.Option(
        False, "--runs-are-implementations", help="Each run (file) is one implementation of the same system (lm-eval "
        "output at batch 1 and at batch 128, say): add the measures between implementations (docs/implementation.md)."),
    n_boot: Boot = 10_000,
    confidence: Confidence = 0.95,
    seed: Seed = 0,
    power: Power = 0.8,
    json_file: JsonFile = None,
    markdown_file: MarkdownFile = None,
    latex_file: LatexFile = None,
    csv_file: CsvFile = None,
) -> None:
    outputs = OutputFiles.of(ctx.params)  # checked, with the confidence level and power, before any input is read
    with parquet_ahead.decoding_ahead(paths):  # Parquet inputs decode on another core while the readers import
        reading = Reading.of(ctx.params)
        console = output_console()
        plain_samples = reading.holds_sample_tables(paths)
        if plain_samples or reading.asks_for_samples(paths, k):
            settings = dict(k=parse_int_list(k, "--k", "1,4,16"), n_boot=n_boot, confidence=confidence, seed=seed)
            unused = UNUSED_BY_SAMPLES if plain_samples else UNUSED_BY_LOGGED_SAMPLES
            analyze_sample_tables(console, paths, reading, outputs, settings, top, ignored_options(ctx, unused))
            return
        print_notes(console, ignored_options(ctx, {"k": SAMPLE_TABLES_ONLY}))
        if reading.holds_run_scores(paths):
            settings = dict(n_boot=n_boot, confidence=confidence, seed=seed)
            analyze_scores(console, paths, reading, outputs, settings, ignored_options(ctx, UNUSED_BY_SCORE_TABLES))
            return
        print_notes(console, ignored_options(ctx, UNUSED_BY_PREDICTIONS))
        settings = dict(task_type=reading.options.task_type, intersect=intersect, primary_metric=primary_metric,
                        n_boot=n_boot, confidence=confidence, seed=seed, power=power)
        with console.status("reading predictions…"), _importing("scipy.special"):
            inputs = read_inputs(paths, reading, console, aligned=not intersect and not implementations)
        parquet_ahead.stop()  # what the reader passed over is not kept through the analysis
        with console.status("analysing…"):
            study = implementation_study(inputs, settings, runs_are_implementations=implementations)
            results, summary, notes = analyze_inputs(inputs, paths, settings, required=study is None)
        sections = analysis_sections(results, summary, top)
        document = _json(results, summary, top)
        if study is not None:
            from seedscope.report.implementation import bug_notes, implementation_sections

            sections.update(implementation_sections(study))
            document["implementation"] = study.to_dict()
            document["implementation_notes"] = study.notes
            notes = notes + study.notes + bug_notes(study)
        long = _long(results) if outputs.csv and results else None
        outputs.emit(console, sections, document, long, max_rows=TERMINAL_ROWS, notes=notes + [
            f"--intersect dropped {result.aligned.n_dropped} example(s) not covered by every run"
            for result in results.values() if result.aligned.n_dropped])


@contextmanager
def _importing(name: str):
    """Import ``name`` in a thread during the block: pyarrow reads the files without holding the GIL, so scipy
    (a fifth of analyze's imports, needed only for the intervals after the reading) loads on another core."""
    thread = threading.Thread(target=importlib.import_module, args=(name,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        thread.join()


def read_inputs(paths: list[Path], reading: Reading, console: Console, *, aligned: bool):
    """With ``aligned``, aligned codes straight from pyarrow when the inputs are one plain file per run; else the
    long table, with the prompts and example texts attached (the readers' notes printed)."""
    from seedscope.io import (
        attach_prompts,
        attach_texts,
        read_aligned_runs,
        read_predictions,
    )

    runs = read_aligned_runs(paths, format=reading.format, options=reading.options) if aligned else None
    if runs is not None:
        return runs
    table = read_predictions(paths, format=reading.format, options=reading.options)
    reader_notes = list(table.attrs.get("notes", []))
    table, prompt_notes = attach_prompts(table, paths)
    table, text_notes = attach_texts(table, reading.options.data_dir, task=reading.options.task)
    print_notes(console, reader_notes + prompt_notes + text_notes, prefix="")
    return table


def analyze_inputs(inputs, paths: list[Path], settings: dict, *,
                   required: bool = True) -> tuple[dict, TaskSummary | None, list[str]]:
    """(task, model) → analysis, the summary over tasks (with several groups) and notes; experiment stores
    analyse their groups of two runs or more (:func:`seedscope.workflows.stores.analysable_groups`). Without
    ``required`` (the implementations are compared anyway) no group of two runs is a note, and no analysis."""
    import pandas as pd

    from seedscope.analysis.seed_effects import analyze, analyze_groups
    from seedscope.analysis.summary import summarize_tasks
    from seedscope.workflows.stores import analysable_groups

    notes = []
    if isinstance(inputs, pd.DataFrame):
        inputs, notes = analysable_groups(inputs, paths, required=required)
        results = analyze_groups(inputs, **settings) if len(inputs) else {}
    else:
        results = {(None, None): analyze(inputs, **settings)}
    summary = summarize_tasks({_label(key): result for key, result in results.items()}) if len(results) > 1 else None
    return results, summary, notes


def implementation_study(inputs, settings: dict, *, runs_are_implementations: bool = False):
    """The measures between implementations when the runs carry ``impl-`` tags (a sweep with --implementation), or
    with ``runs_are_implementations`` between the runs themselves (each one implementation, named after its run)."""
    import pandas as pd

    from seedscope.analysis.implementation import (
        as_implementations,
        compare_implementations,
    )

    if not isinstance(inputs, pd.DataFrame):
        return None
    if runs_are_implementations:
        inputs = as_implementations(inputs)
    return compare_implementations(inputs, confidence=settings["confidence"], n_boot=settings["n_boot"],
                                   seed=settings["seed"])


def analyze_scores(console: Console, paths: list[Path], reading: Reading, outputs: OutputFiles, settings: dict,
                   ignored: list[str]) -> None:
    """The macro part for per-run score tables, with the note that the micro part needs predictions."""
    from seedscope.analysis.run_scores import NEEDS_PREDICTIONS, analyze_run_scores
    from seedscope.report.tables import score_sections

    scores = reading.run_scores(paths, metric=_split(reading.options.metric))
    summaries = analyze_run_scores(scores.table, scores.metrics, **settings)
    sections = score_sections(summaries, settings["confidence"])
    notes = scores.notes + ignored + [NEEDS_PREDICTIONS]
    document = {"input": "run_scores", "units": "as given", "confidence": settings["confidence"],
                "paired_runs": scores.paired, "groups": [summary.to_dict() for summary in summaries], "notes": notes}
    outputs.emit(console, sections, document, notes=notes)


def analyze_sample_tables(console: Console, paths: list[Path], reading: Reading, outputs: OutputFiles, settings: dict,
                          top: int, ignored: list[str]) -> None:
    """The sampling estimators of sample tables, per system (a ``model`` column's values; else one system)."""
    from seedscope.analysis.sampling import analyze_samples
    from seedscope.report.sampling import sampling_sections

    with console.status("reading samples…"):
        table = reading.samples(paths)
    print_notes(console, list(table.attrs.get("notes", [])), prefix="")
    systems = dict(iter(table.groupby("model", sort=True))) if "model" in table.columns else {"samples": table}
    with console.status("analysing…"):
        results = {str(name): analyze_samples(rows, **settings) for name, rows in systems.items()}
    sections, notes = {}, list(ignored)
    for name, result in results.items():
        sections.update(sampling_sections(result, f"{name}: " if len(results) > 1 else "", top))
        notes += [note for note in result.notes if note not in notes]
    document = {"input": "samples", "systems": {name: result.to_dict() for name, result in results.items()},
                "notes": notes}
    outputs.emit(console, sections, document, notes=notes)


def analysis_sections(results: dict, summary, top: int) -> dict:
    """Every titled table of the analyses (prefixed with their group when there are several) and of the summary."""
    from seedscope.report import tables

    sections: dict = {}
    for key, result in results.items():
        prefix = f"{_label(key)}: " if len(results) > 1 else ""
        sections.update({prefix + title: frame for title, frame in tables.analysis_sections(result, top).items()})
    if summary is not None:
        sections.update(tables.summary_sections(summary))
    return sections


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
    return pd.concat(frames, ignore_index=True)[["group", "section", "name", "statistic", "value"]].set_index("group")


def register(app: typer.Typer) -> None:
    """Add this module's commands to the main app."""
    app.command("analyze", help=HELP, no_args_is_help=True)(analyze_command)

