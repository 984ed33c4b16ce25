"""Example texts for predictions, read from the task's labelled dev file (local data only, never the hub)."""

from __future__ import annotations

import os
import warnings

import numpy as np
import pandas as pd

from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.notes import recorded
from seedscope.predictions import EXAMPLE_ID, TEXT
from seedscope.tasks import DATA_DIR_ENV, find_task, load_examples

TEXT_COLUMNS = (TEXT, "text_pair")


def task_texts(task: str | None, data_dir: str | os.PathLike | None = None) -> pd.DataFrame | None:
    """``text`` / ``text_pair`` of a registered task's validation examples (index = example_id).

    Read only from local data (``data_dir`` or ``$SEEDSCOPE_DATA_DIR``): a report does not
    download data. None when the task is unknown or its data is not there.
    """
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV)
    if task is None or not data_dir or find_task(task) is None:
        return None
    try:
        examples = load_examples(task, split="validation", data_dir=data_dir)
    except SeedscopeError:
        return None
    return examples.set_index(EXAMPLE_ID)[list(TEXT_COLUMNS)]


def attach_texts(table: pd.DataFrame, data_dir=None, *, task: str | None = None) -> tuple[pd.DataFrame, list[str]]:
    """Add a ``text`` column (``text ‖ text_pair`` for pair tasks) so unstable examples show text.

    The task comes from the table's ``task`` column or ``task``; the files from ``data_dir``
    or ``$SEEDSCOPE_DATA_DIR``. Returns the table and notes on what could not be attached (each
    also a :class:`~seedscope.errors.ReadingChoiceWarning`); a table that already has text is kept.
    """
    with recorded() as notes:
        return _with_texts(table, data_dir, task), notes


def _with_texts(table: pd.DataFrame, data_dir, task: str | None) -> pd.DataFrame:
    if TEXT in table.columns:
        return table
    data_dir = data_dir or os.environ.get(DATA_DIR_ENV)
    tasks = table["task"].dropna().unique().tolist() if "task" in table.columns else [task] if task else []
    if data_dir is None or not tasks:
        return table
    texts = []
    for name in tasks:
        if find_task(name) is None:
            continue
        try:
            examples = load_examples(name, "validation", data_dir=data_dir)
        except SeedscopeError as error:
            warnings.warn(f"no example texts for {name}: {error}", ReadingChoiceWarning, stacklevel=3)
            continue
        pair = examples["text_pair"].fillna("") if "text_pair" in examples.columns else ""
        text = examples["text"].astype(str) + np.where(pair == "", "", " ‖ " + pair.astype(str))
        frame = pd.DataFrame({EXAMPLE_ID: examples[EXAMPLE_ID].astype(str), TEXT: text})
        texts.append(frame.assign(task=name) if "task" in table.columns else frame)
    if not texts:
        return table
    keys = [EXAMPLE_ID, "task"] if "task" in table.columns else [EXAMPLE_ID]
    return table.astype({EXAMPLE_ID: str}).merge(pd.concat(texts), on=keys, how="left")
