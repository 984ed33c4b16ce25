"""Options that tell the readers how to read prediction files, shared by every command that reads them,
and the checks every command runs on them whatever its input: values in range, and a note for each
option given that the input at hand cannot use (never silently accepted)."""

from __future__ import annotations

import warnings
from typing import Mapping

import typer

from seedscope.errors import IgnoredOptionWarning
from seedscope.notes import recorded
from seedscope.validation import check_power as check_probability

RUN_COLUMN_OPTION = typer.Option(
    None, "--run-column", "--seed-column", help="Column naming the run or seed (long tables); default: auto-detected (run, seed, run_id …)."
)
ID_COLUMN_OPTION = typer.Option(None, help="Column with the example id; default: auto-detected.")
PREDICTION_COLUMN_OPTION = typer.Option(None, help="Column with the prediction; default: auto-detected.")
LABEL_COLUMN_OPTION = typer.Option(None, help="Column with the gold label; default: auto-detected.")
FORMAT_OPTION = typer.Option(
    None, "--format", help="Input format when the file extension does not tell (csv, tsv, jsonl, parquet, lm-eval, run-glue, store)."
)
CLUSTER_COLUMN_OPTION = typer.Option(
    None, help="Column grouping examples (answers of one question, prompts of one item) for clustered standard errors."
)
METRIC_OPTION = typer.Option(
    None, "--metric",
    help="Per-run score tables: the score column(s), comma-separated; default: every numeric column. inspect_ai logs: the scorer (default: the first).",
)
SCALE_OPTION = typer.Option(
    None, "--scale", help="Per-run score tables: multiply every score by this (0.01 reads percentages written without % as fractions)."
)
SYSTEM_COLUMN_OPTION = typer.Option(
    None, "--system-column",
    help="Per-run score tables: column(s) whose values name the system (repeatable); default: the columns that vary.",
)
FILTER_OPTION = typer.Option(None, "--filter", help="lm-evaluation-harness filter to read (default: the only or first one).")
RUNS_BY_OPTION = typer.Option(
    None, "--runs-by",
    help="lm-eval logs: 'file' makes every samples file one run of one task (prompt templates, checkpoints …), "
    "named after the part of its file name that differs; default: a folder or file per run, a file per task.",
)


#: why an option does nothing for an input kind, to say in its note
SCORE_TABLES = "per-run score tables (one number per run, no per-example predictions)"
PREDICTIONS = "per-example predictions (it is for per-run score tables)"


def check_power(power: float) -> float:
    """The power of a minimum detectable difference, checked by the library's one rule, named as the flag."""
    return check_probability(power, "--power")


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
