"""The reading options of ``analyze``, ``report``, ``compare`` and ``subsets``, declared once, and the object they make.

Each option is an ``Annotated`` alias a command names as a parameter (``run_column:
RunColumn = None``). :meth:`Reading.of` turns the parameters a command was given into one
:class:`Reading` — the input format, the readers' :class:`~seedscope.io.common.ReadOptions` and
the options of per-run score tables — which the command hands to the readers. It also says,
for the kind of input at hand, which options given on the command line do not apply (a note
each: never silently accepted).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, fields
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Mapping, Optional

import typer

from seedscope.cli.vocabulary import ADVANCED
from seedscope.errors import IgnoredOptionWarning
from seedscope.notes import recorded

if TYPE_CHECKING:
    from seedscope.io.common import ReadOptions


class TaskTypeChoice(str, Enum):
    classification = "classification"
    regression = "regression"


class EpochsChoice(str, Enum):
    samples = "samples"
    runs = "runs"


RunColumn = Annotated[Optional[str], typer.Option(
    "--run-column", metavar="NAME", rich_help_panel=ADVANCED,
    help="Column naming the run (one seed's predictions) in a long table; default: auto-detected (run, seed, run_id …).")]
IdColumn = Annotated[Optional[str], typer.Option(
    "--id-column", metavar="NAME", rich_help_panel=ADVANCED, help="Column with the example id; default: auto-detected.")]
PredictionColumn = Annotated[Optional[str], typer.Option(
    "--prediction-column", metavar="NAME", rich_help_panel=ADVANCED,
    help="Column with the prediction; default: auto-detected.")]
LabelColumn = Annotated[Optional[str], typer.Option(
    "--label-column", metavar="NAME", rich_help_panel=ADVANCED, help="Column with the gold label; default: auto-detected.")]
#: the input file formats the readers know (``seedscope.io.READERS``), for the help
INPUT_FORMATS = "csv, tsv, jsonl, parquet, lm-eval, inspect, helm, lighteval, run-glue or store"
InputFormat = Annotated[Optional[str], typer.Option(
    "--input-format", metavar="NAME", rich_help_panel=ADVANCED,
    help=f"Input file format when the extension does not tell: {INPUT_FORMATS}.")]
ClusterColumn = Annotated[Optional[str], typer.Option(
    "--cluster-column", metavar="NAME", rich_help_panel=ADVANCED,
    help="Column grouping examples (answers of one question, prompts of one item) for clustered standard errors.")]
ProbColumns = Annotated[Optional[str], typer.Option(
    "--prob-columns", metavar="NAME", rich_help_panel=ADVANCED,
    help="Prefix (or list-valued column) of the class-probability columns; default: prob_CLASS.")]
Scale = Annotated[Optional[float], typer.Option(
    "--scale", metavar="X", rich_help_panel=ADVANCED,
    help="Multiply every score of a per-run score table by this (0.01 reads percentages written without %).")]
SystemColumn = Annotated[Optional[list[str]], typer.Option(
    "--system-column", metavar="NAME", rich_help_panel=ADVANCED,
    help="Column naming the system; per-run score tables: repeatable, default: the columns that vary.")]
LmEvalFilter = Annotated[Optional[str], typer.Option(
    "--filter", metavar="NAME", rich_help_panel=ADVANCED,
    help="lm-evaluation-harness filter to read (default: the only or first one).")]
RunsBy = Annotated[Optional[str], typer.Option(
    "--runs-by", metavar="file", rich_help_panel=ADVANCED,
    help="lm-eval logs: 'file' makes every samples file one run of one task (prompt templates, checkpoints …), "
    "named after the part of its file name that differs; default: a folder or file per run, a file per task.")]
EpochsAs = Annotated[Optional[EpochsChoice], typer.Option(
    "--epochs-as", metavar="runs|samples", rich_help_panel=ADVANCED,
    help="inspect_ai logs: 'runs' reads each epoch as one run, 'samples' the epochs of a log as the sampled "
    "generations of one run; default: runs, or samples with --k.")]
Task = Annotated[Optional[str], typer.Option(
    "--task", metavar="NAME", rich_help_panel=ADVANCED,
    help="Task (rte, sst2, cb …): picks one from inputs that hold several, or names it for files without one "
    "(run_glue.py predictions take their gold labels from it).")]
#: the opening of --data-dir's help, the same in every command; each says what it reads there
DATA_DIR = "Folder of the GLUE / SuperGLUE files, laid out like glue/RTE/dev.tsv"


def data_dir_option(use: str) -> Any:
    """``--data-dir``, with what this command reads there (``use``)."""
    return Annotated[Optional[Path], typer.Option(
        "--data-dir", metavar="DIR", rich_help_panel=ADVANCED,
        help=f"{DATA_DIR}: {use}; default $SEEDSCOPE_DATA_DIR, else the Hugging Face hub.")]


#: where the reading commands find the gold labels and texts of what they read
DataDir = data_dir_option("the gold labels and example texts of the inputs")
Intersect = Annotated[bool, typer.Option(
    "--intersect", rich_help_panel=ADVANCED,
    help="Use only the example ids that every run covers, and say how many were dropped.")]
TaskType = Annotated[Optional[TaskTypeChoice], typer.Option(
    "--task-type", metavar="KIND", rich_help_panel=ADVANCED,
    help="Task type (classification or regression); default: regression when predictions are non-integer floats.")]
def metric_option(choices: str, panel: str | None = None) -> Any:
    """``--metric``, the one name of which metric a command analyses, with the ``choices`` of this command."""
    return Annotated[Optional[str], typer.Option("--metric", metavar="NAME", rich_help_panel=panel,
                                                 help=f"Metric to analyse: {choices}.")]


#: the options every reading command renamed: old name → new name (None: the old flag asked for the default)
READING_RENAMES = {"--format": "--input-format", "--seed-column": "--run-column", "--no-intersect": None}

#: why an option does nothing for an input kind, to say in its note
SCORE_TABLES = "per-run score tables (one number per run, no per-example predictions)"
PREDICTIONS = "per-example predictions (it is for per-run score tables)"
#: command parameters whose name differs from the ReadOptions field they fill
FIELD_OF_PARAMETER = {"lm_eval_filter": "filter"}


@dataclass(frozen=True)
class Reading:
    """How a command reads its inputs: the format, the readers' options, and the score-table options."""

    format: str | None
    options: ReadOptions
    system_columns: list[str] | None = None
    scale: float | None = None

    @classmethod
    def of(cls, params: Mapping[str, Any]) -> Reading:
        """The reading options among a command's parameters (``ctx.params``); those it lacks keep their default."""
        from seedscope.io.common import ReadOptions

        names = {field.name for field in fields(ReadOptions)}
        values = {FIELD_OF_PARAMETER.get(key, key): getattr(value, "value", value) for key, value in params.items()}
        return cls(format=params.get("input_format"),
                   options=ReadOptions(**{key: value for key, value in values.items() if key in names}),
                   system_columns=params.get("system_column"), scale=params.get("scale"))

    def scores_by_metric(self, paths: list[Path]) -> bool:
        """True when the inputs keep several scores per example, one per metric (inspect_ai scorers, HELM stats,
        lighteval metrics), so that ``--metric`` picks what is read."""
        from seedscope.io import METRIC_FORMATS, expand_inputs
        from seedscope.io.detect import common_format

        return common_format(expand_inputs(paths, self.format), self.format) in METRIC_FORMATS

    def holds_run_scores(self, paths: list[Path]) -> bool:
        """True when every input is a per-run score table."""
        from seedscope.io import holds_run_scores

        return holds_run_scores(paths, self.format)

    def holds_sample_tables(self, paths: list[Path]) -> bool:
        """True when every input is a sample table (a plain table with ``sample`` and ``correct`` columns)."""
        from seedscope.io import holds_sample_tables

        return holds_sample_tables(paths, self.format)

    def asks_for_samples(self, paths: list[Path], k: str | None) -> bool:
        """The sample analysis of framework logs that keep several generations per item (inspect_ai epochs, lighteval
        n, lm-eval repeats): asked for with ``--k`` or ``--epochs-as samples``."""
        from seedscope.io import holds_sampled_generations

        asked = k is not None or self.options.epochs_as == "samples"
        return asked and self.options.epochs_as != "runs" and holds_sampled_generations(paths, self.format)

    def samples(self, paths: list[Path]):
        """One sample table of ``paths``: plain sample tables, or the sampled generations of framework logs
        (:func:`seedscope.io.read_samples`, its notes in ``attrs["notes"]``)."""
        from seedscope.io import holds_sample_tables, read_sample_tables, read_samples

        if holds_sample_tables(paths, self.format):
            return read_sample_tables(paths, self.format)
        return read_samples(paths, format=self.format, options=self.options)

    def sweeps(self, paths: list[Path], names: list[str]) -> tuple[dict, list[str]]:
        """Name → each input read as one sweep (:func:`seedscope.io.read_sweep`), and the readers' notes (a damaged
        catalog cell, the lm-eval filter used …): every command that reads sweeps says them, as ``analyze`` does."""
        from seedscope.io import read_sweep

        tables = {name: read_sweep(path, format=self.format, options=self.options) for name, path in zip(names, paths)}
        return tables, reader_notes(tables.values())

    def run_scores(self, paths: list[Path], *, metric: list[str] | str | None, names: list[str] | None = None):
        """The per-run score tables of ``paths`` (:func:`seedscope.io.read_run_scores`)."""
        from seedscope.io import read_run_scores

        return read_run_scores(paths, run_column=self.options.run_column, metric=metric, names=names,
                               system_columns=self.system_columns, task=self.options.task, fmt=self.format,
                               scale=self.scale)


def reader_notes(tables) -> list[str]:
    """The notes the readers kept in each table's ``attrs["notes"]``, each once (aligned codes carry none)."""
    return list(dict.fromkeys(note for table in tables for note in getattr(table, "attrs", {}).get("notes", [])))


def ignored_options(ctx: typer.Context, unused: Mapping[str, str]) -> list[str]:
    """One note (an :class:`~seedscope.errors.IgnoredOptionWarning`) per option given on the command line that this
    input cannot use (``unused``: parameter → why)."""
    flags = {param.name: param.opts[0] for param in ctx.command.params if getattr(param, "opts", None)}
    with recorded() as notes:
        for name, why in unused.items():
            source = ctx.get_parameter_source(name)
            if source is not None and source.name == "COMMANDLINE":
                warnings.warn(f"{flags.get(name, name)} does not apply to {why}; ignored", IgnoredOptionWarning,
                              stacklevel=2)
    return notes
