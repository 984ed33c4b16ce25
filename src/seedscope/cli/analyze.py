"""``seedscope analyze``: macro and micro seed effects of predictions you already have."""

from __future__ import annotations

import importlib
import threading
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

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
    PredictionColumn,
    ProbColumns,
    Reading,
    RunColumn,
    RunsBy,
    Scale,
    SystemColumn,
    Task,
    READING_RENAMES,
    TaskType,
    ignored_options,
    metric_option,
)
from seedscope.cli.outputs import (
    N_BOOT,
    TOP,
    Boot,
    Confidence,
    CsvFile,
    Details,
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
from seedscope.cli.vocabulary import ADVANCED, renamed
from seedscope.notes import recorded

if TYPE_CHECKING:
    from rich.console import Console

    from seedscope.analysis.summary import TaskSummary

HELP = """Seed effects of predictions you already have: how much does the metric move from seed to seed, and on which examples do the seeds disagree?

PATHS are several runs of one model on the same examples, one run per seed: one file per run
(CSV, TSV, JSONL or Parquet, named after the file), a folder of such files, one long table
with a run column, lm-evaluation-harness --log_samples output (a folder per seed), or an
experiment directory of `seedscope sweep`.

It prints a verdict, then the spread of each metric over the seeds: VAR is the population
standard deviation (divisor S, as the paper publishes it), std the sample one. CON is the
share of examples on which two seeds give the same answer, CCON the share on which both are
right. --details adds every table (per run, error bars over examples, the seed / example
variance split, the most unstable examples); --json and --csv hold them all.

Per-run score tables (one row per run: model, seed, acc) get the spread per system; sample
tables (several sampled answers per item) get pass@k and its kin (docs/how-to/sampling.md).
docs/concepts/seed-effects.md explains every number.

\b
Examples:

```
seedscope analyze examples/rte/*.csv
seedscope analyze examples/rte/*.csv --details --json rte.json
seedscope analyze <lm-eval-out>/ --task rte --metric f1_macro
seedscope analyze <samples>.parquet --k 1,4,16
```
"""

#: options a per-run score table cannot use (it has no per-example predictions)
UNUSED_BY_SCORE_TABLES = {name: SCORE_TABLES for name in (
    "id_column", "prediction_column", "label_column", "cluster_column", "prob_columns", "lm_eval_filter", "runs_by", "epochs_as",
    "data_dir", "task_type", "intersect", "top", "power")}
#: options per-example predictions cannot use (``--metric`` picks an inspect_ai scorer, and is used there)
UNUSED_BY_PREDICTIONS = {"system_column": PREDICTIONS, "scale": PREDICTIONS}
#: options a sample table cannot use (its columns are named by the sample table's contract), and why --k is not used
SAMPLES = "sample tables (run, example_id, sample, correct, prediction: named by their contract)"
UNUSED_BY_SAMPLES = {name: SAMPLES for name in (
    "run_column", "id_column", "prediction_column", "label_column", "cluster_column", "metric", "system_column",
    "scale", "prob_columns", "lm_eval_filter", "runs_by", "task", "data_dir", "task_type", "intersect", "power")}
#: framework logs read as samples (:func:`seedscope.io.read_samples`) pick their scorer, filter and task
UNUSED_BY_LOGGED_SAMPLES = {name: why for name, why in UNUSED_BY_SAMPLES.items() if name not in ("metric", "lm_eval_filter", "task")}
#: a table longer than this (per run, at thousands of runs) is one line in the terminal; the files hold every row
TERMINAL_ROWS = 500
SAMPLE_TABLES_ONLY = "these inputs (it picks the ks of sample tables, which hold several samples per item)"


#: --metric of analyze: what it names for each kind of input
METRIC_CHOICES = ("accuracy, f1_macro, mcc, pearson, spearman … computed from predictions (default: the task's "
                  "primary metric), a per-run score table's column(s), comma-separated (default: every numeric column), "
                  "or an inspect_ai scorer, HELM stat or lighteval metric (default: the first)")
AnalyzedMetric = metric_option(METRIC_CHOICES)
Implementations = Annotated[bool, typer.Option(
    "--implementations", rich_help_panel=ADVANCED,
    help="The inputs are implementations of one system: each run is one (lm-eval output at batch 1 and at batch "
    "128, say), and the measures between implementations are added (docs/how-to/implementation.md).")]
#: the old option names analyze still reads, for one release
RENAMES = {**READING_RENAMES, "--runs-are-implementations": "--implementations", "--primary-metric": "--metric"}


def analyze_command(
    ctx: typer.Context,
    paths: list[Path] = typer.Argument(..., metavar="PATHS", show_default=False,
                                       help="The runs: files, folders, an lm-eval output or an experiment directory."),
    metric: AnalyzedMetric = None,
    details: Details = False,
    json_file: JsonFile = None,
    csv_file: CsvFile = None,
    markdown_file: MarkdownFile = None,
    latex_file: LatexFile = None,
    k: Ks = None,
    implementations: Implementations = False,
    task: Task = None,
    run_column: RunColumn = None,
    id_column: IdColumn = None,
    prediction_column: PredictionColumn = None,
    label_column: LabelColumn = None,
    cluster_column: ClusterColumn = None,
    system_column: SystemColumn = None,
    scale: Scale = None,
    prob_columns: ProbColumns = None,
    lm_eval_filter: LmEvalFilter = None,
    runs_by: RunsBy = None,
    epochs_as: EpochsAs = None,
    input_format: InputFormat = None,
    data_dir: DataDir = None,
    task_type: TaskType = None,
    intersect: Intersect = False,
    top: Top = TOP,
    n_boot: Boot = N_BOOT,
    confidence: Confidence = 0.95,
    seed: Seed = 0,
    power: Power = 0.8,
) -> None:
    outputs = OutputFiles.of(ctx.params)  # checked, with the confidence level and power, before any input is read
    with parquet_ahead.decoding_ahead(paths):  # Parquet inputs decode on another core while the readers import
        reading = Reading.of(ctx.params)
        console = output_console()
        plain_samples = reading.holds_sample_tables(paths)
        if plain_samples or reading.asks_for_samples(paths, k):
            settings = dict(k=parse_int_list(k, "--k", "1,4,16"), n_boot=n_boot, confidence=confidence, seed=seed)
            unused = UNUSED_BY_SAMPLES if plain_samples else UNUSED_BY_LOGGED_SAMPLES
            analyze_sample_tables(console, paths, reading, outputs, settings, top, ignored_options(ctx, unused), details)
            return
        print_notes(console, ignored_options(ctx, {"k": SAMPLE_TABLES_ONLY}))
        if reading.holds_run_scores(paths):
            settings = dict(n_boot=n_boot, confidence=confidence, seed=seed)
            analyze_scores(console, paths, reading, outputs, settings, ignored_options(ctx, UNUSED_BY_SCORE_TABLES),
                           details)
            return
        print_notes(console, ignored_options(ctx, UNUSED_BY_PREDICTIONS))
        reading, primary_metric = _metric_of_predictions(reading, paths, metric)
        settings = dict(task_type=reading.options.task_type, intersect=intersect, primary_metric=primary_metric,
                        n_boot=n_boot, confidence=confidence, seed=seed, power=power)
        with console.status("reading predictions…"), _importing("scipy.special"):
            inputs = read_inputs(paths, reading, console, aligned=not intersect and not implementations)
        parquet_ahead.stop()  # what the reader passed over is not kept through the analysis
        with console.status("analysing…"), recorded() as said:  # what the analysis says (an interval clipped …)
            study = implementation_study(inputs, settings, runs_are_implementations=implementations)
            results, summary, notes = analyze_inputs(inputs, paths, settings, required=study is None)
        notes = notes + said
        sections = analysis_sections(results, summary, top)
        verdict, compact, legend = analysis_view(results, summary)
        document = _json(results, summary, top)
        if study is not None:
            from seedscope.report.implementation import bug_notes, implementation_sections

            sections.update(implementation_sections(study))
            compact.update(implementation_sections(study))
            document["implementation"] = study.to_dict()
            document["implementation_notes"] = study.notes
            notes = notes + study.notes + bug_notes(study)
        long = _long(results) if outputs.csv and results else None
        outputs.emit(console, sections, document, long, max_rows=TERMINAL_ROWS, verdict=verdict, compact=compact,
                     details=details, legend=legend, notes=notes + [
                         f"--intersect dropped {result.aligned.n_dropped} example(s) not covered by every run"
                         for result in results.values() if result.aligned.n_dropped])


def _metric_of_predictions(reading: Reading, paths: list[Path], metric: str | None) -> tuple[Reading, str | None]:
    """What ``--metric`` names for predictions: a scorer (HELM stat, lighteval metric) of inputs that keep one score per
    metric, which the readers pick; else the metric computed from the predictions (ζ of the summary), which the
    analysis checks. Returns the reading options and that primary metric."""
    from seedscope.metrics.macro import CLASSIFICATION_METRICS, REGRESSION_METRICS

    if metric is None or (metric not in CLASSIFICATION_METRICS + REGRESSION_METRICS and reading.scores_by_metric(paths)):
        return reading, None
    return replace(reading, options=replace(reading.options, metric=None)), metric


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
                   ignored: list[str], details: bool = False) -> None:
    """The macro part for per-run score tables, with the note that the micro part needs predictions."""
    from seedscope.analysis.run_scores import NEEDS_PREDICTIONS, analyze_run_scores
    from seedscope.report.tables import SPREAD_LEGEND, compact_scores, score_sections
    from seedscope.report.verdict import score_lines

    scores = reading.run_scores(paths, metric=_split(reading.options.metric))
    with recorded() as said:
        summaries = analyze_run_scores(scores.table, scores.metrics, **settings)
    sections = score_sections(summaries, settings["confidence"])
    notes = scores.notes + ignored + said + [NEEDS_PREDICTIONS]
    document = {"input": "run_scores", "units": "as given", "confidence": settings["confidence"],
                "paired_runs": scores.paired, "groups": [summary.to_dict() for summary in summaries], "notes": notes}
    outputs.emit(console, sections, document, notes=notes, verdict=[line for summary in summaries
                                                                    for line in score_lines(summary)],
                 compact=compact_scores(summaries, settings["confidence"]), details=details,
                 legend=[SPREAD_LEGEND.replace("seeds", "runs")])


def analyze_sample_tables(console: Console, paths: list[Path], reading: Reading, outputs: OutputFiles, settings: dict,
                          top: int, ignored: list[str], details: bool = False) -> None:
    """The sampling estimators of sample tables, per system (a ``model`` column's values; else one system)."""
    from seedscope.analysis.sampling import analyze_samples
    from seedscope.report.sampling import compact_sampling, sampling_sections
    from seedscope.report.verdict import sampling_lines

    with console.status("reading samples…"):
        table = reading.samples(paths)
    print_notes(console, list(table.attrs.get("notes", [])), prefix="")
    systems = dict(iter(table.groupby("model", sort=True))) if "model" in table.columns else {"samples": table}
    with console.status("analysing…"):
        results = {str(name): analyze_samples(rows, **settings) for name, rows in systems.items()}
    sections, compact, verdict, notes = {}, {}, [], list(ignored)
    for name, result in results.items():
        prefix = f"{name}: " if len(results) > 1 else ""
        sections.update(sampling_sections(result, prefix, top))
        compact.update(compact_sampling(result, prefix))
        verdict += sampling_lines(prefix, result)
        notes += [note for note in result.notes if note not in notes]
    document = {"input": "samples", "systems": {name: result.to_dict() for name, result in results.items()},
                "notes": notes}
    outputs.emit(console, sections, document, notes=notes, verdict=verdict, compact=compact, details=details)


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


def analysis_view(results: dict, summary) -> tuple[list[str], dict, list[str]]:
    """The verdict, the compact tables and their legend: for one group its sentences (the HTML report's) and the
    spread of each metric over the seeds; for several the first sentence of each and the paper's Table 1."""
    from seedscope.report import tables
    from seedscope.report.verdict import task_lines

    if not results:
        return [], {}, []
    if len(results) == 1:
        (key, result), = results.items()
        return task_lines(_label(key), result), tables.compact_analysis(result), [tables.SPREAD_LEGEND]
    lines = [task_lines(_label(key), result)[0] for key, result in results.items()]
    title, table1 = next(iter(tables.summary_sections(summary).items()))
    return lines, {title: table1}, [tables.TABLE1_LEGEND]


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
    app.command("analyze", help=HELP, no_args_is_help=True, cls=renamed(RENAMES))(analyze_command)

