"""Options that tell the readers how to read prediction files, shared by every command that reads them."""

from __future__ import annotations

import typer

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
    help="Per-run score tables: the score column(s), comma-separated; default: every column named like a metric (acc, f1, mcc …).",
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
