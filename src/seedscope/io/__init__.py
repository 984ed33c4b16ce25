"""Read predictions from the files researchers already have, into one prediction table.

>>> from seedscope.io import read_predictions
>>> table = read_predictions(["seed1.csv", "seed2.csv"])             # one file per run
>>> table = read_predictions(["out/seed1", "out/seed2"])             # lm-eval --log_samples folders
>>> table = read_predictions(["s1/predict_results_rte.txt", "s2/predict_results_rte.txt"],
...                          data_dir="data")                       # run_glue.py + gold dev labels

See docs/readers.md for every format, how it is detected and the column options.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.io.checks import merge_sources
from seedscope.io.common import ReadOptions, require_readable
from seedscope.io.detect import FORMATS, common_format, detect_format
from seedscope.io.lm_eval import read_lm_eval
from seedscope.io.run_glue import read_run_glue
from seedscope.io.store import read_store
from seedscope.io.tabular import read_tabular

__all__ = ["FORMATS", "detect_format", "read_predictions"]


def read_predictions(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    format: str | None = None,
    run_column: str | None = None,
    id_column: str | None = None,
    prediction_column: str | None = None,
    label_column: str | None = None,
    prob_columns: str | dict[str, str] | None = None,
    task: str | None = None,
    task_type: str | None = None,
    data_dir: str | os.PathLike | None = None,
    filter: str | None = None,
    run_names: Iterable[str] | None = None,
) -> pd.DataFrame:
    """One long prediction table (run, example_id, prediction, label, prob_<class>, task, model).

    ``paths``: files or folders, all of one format (detected, or ``format=`` one of
    :data:`FORMATS`). The ``*_column`` options name a table's columns when the defaults are not
    found; ``prob_columns`` is a column prefix, a list-valued column, or ``{column: class}``.
    ``task`` picks a task (lm-eval, store, multi-task tables) or names it (run_glue files
    without a task in their name); ``data_dir`` is where run_glue's gold dev files live;
    ``filter`` picks the lm-eval filter; ``run_names`` names one-run-per-input runs.
    Messages about choices made (such as the lm-eval filter used) are in ``table.attrs["notes"]``.
    """
    paths = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not paths:
        raise SeedscopeError("no input given: name at least one predictions file or folder")
    for path in paths:
        require_readable(path)
    fmt = common_format(paths, format)
    options = ReadOptions(
        run_column=run_column,
        id_column=id_column,
        prediction_column=prediction_column,
        label_column=label_column,
        prob_columns=prob_columns,
        task=task,
        task_type=task_type,
        data_dir=data_dir,
        filter=filter,
        run_names=tuple(run_names) if run_names is not None else None,
    )
    if fmt == "lm-eval":
        sources = read_lm_eval(paths, options)
    elif fmt == "run-glue":
        sources = read_run_glue(paths, options)
    elif fmt == "store":
        sources = read_store(paths, options)
    else:
        sources = read_tabular(paths, fmt, options)
    return merge_sources(sources, task_type)
