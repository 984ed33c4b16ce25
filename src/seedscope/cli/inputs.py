"""Options that tell the readers how to read prediction files, shared by every command that reads them."""

from __future__ import annotations

import typer

RUN_COLUMN_OPTION = typer.Option(None, help="Column naming the run (long tables); default: auto-detected.")
ID_COLUMN_OPTION = typer.Option(None, help="Column with the example id; default: auto-detected.")
PREDICTION_COLUMN_OPTION = typer.Option(None, help="Column with the prediction; default: auto-detected.")
LABEL_COLUMN_OPTION = typer.Option(None, help="Column with the gold label; default: auto-detected.")
FORMAT_OPTION = typer.Option(
    None, "--format", help="Input format when the file extension does not tell (csv, tsv, jsonl, parquet, lm-eval, run-glue, store)."
)
CLUSTER_COLUMN_OPTION = typer.Option(
    None, help="Column grouping examples (answers of one question, prompts of one item) for clustered standard errors."
)
