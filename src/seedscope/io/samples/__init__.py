"""Sampled generations from files users already have, as one sample table (:mod:`seedscope.samples`).

>>> from seedscope.io import read_samples
>>> table = read_samples("logs/arith.eval")                   # inspect_ai --epochs 4: 4 samples per item
>>> table = read_samples("details/", metric="pass@k:k=1&n=4")  # lighteval, n samples per document
>>> table = read_samples(["out/seed1", "out/seed2"])          # lm-eval --log_samples of a task with repeats

One registry (:data:`SAMPLE_READERS`) maps each format that can hold several generations per
item to its reader; every reader returns the rows of the table (plus ``task`` / ``model`` where
the file names them), checked here once by :func:`seedscope.samples.check_sample_table`. Items
that hold different numbers of samples are read as they are, with a note: the estimators use
each item's own n. See docs/how-to/inputs.md, "Sampled generations".
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from seedscope.errors import IgnoredOptionWarning, SeedscopeError, UnevenSamplesWarning
from seedscope.io.common import ReadOptions
from seedscope.io.detect import common_format
from seedscope.io.samples.inspect_logs import read_inspect_samples
from seedscope.io.samples.lighteval import read_lighteval_samples
from seedscope.io.samples.lm_eval import read_lm_eval_samples
from seedscope.io.validate import check_input, names_unreadable_files
from seedscope.notes import recorded
from seedscope.predictions import EXAMPLE_ID, RUN
from seedscope.samples import SAMPLE, check_sample_table

#: format → reader of a list of paths (all of that format) into the rows of a sample table
SAMPLE_READERS: dict[str, Callable[[list[Path], ReadOptions], pd.DataFrame]] = {
    "inspect": read_inspect_samples,
    "lighteval": read_lighteval_samples,
    "lm-eval": read_lm_eval_samples,
}
#: the values of ``epochs_as`` (``--epochs-as``)
EPOCHS_AS = ("samples", "runs")


@names_unreadable_files
def holds_sampled_generations(paths: list[Path], format: str | None = None) -> bool:
    """True when the inputs are of a format that keeps several generations per item (``SAMPLE_READERS``)."""
    return common_format([Path(p) for p in paths], format) in SAMPLE_READERS


def read_samples(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    format: str | None = None,
    metric: str | None = None,
    filter: str | None = None,
    task: str | None = None,
    run_names: Iterable[str] | None = None,
    epochs_as: str | None = None,
    options: ReadOptions | None = None,
) -> pd.DataFrame:
    """One sample table (run, example_id, sample, correct, prediction, label, text, task, model).

    ``paths``: inspect_ai logs, lighteval details or lm-eval ``--log_samples`` files or folders,
    all of one format (detected, or ``format=``). ``metric`` picks the inspect_ai scorer or the
    lighteval metric that says which samples are correct; ``filter`` the lm-eval filter whose
    answers are compared with the target; ``task`` one lm-eval task; ``run_names`` names the runs
    (one per log, file or folder); ``epochs_as="runs"`` reads inspect_ai epochs as runs of one
    sample each (default ``"samples"``: one run per log). Choices made are notes
    (:class:`~seedscope.errors.SeedscopeWarning`), kept in ``table.attrs["notes"]``; an unreadable
    input is one :class:`~seedscope.errors.SeedscopeError`.
    """
    paths = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not paths:
        raise SeedscopeError("no input given: name at least one file or folder of sampled generations")
    for path in paths:
        check_input(path)
    given = dict(metric=metric, filter=filter, task=task, epochs_as=epochs_as,
                 run_names=tuple(run_names) if run_names is not None else None)
    options = replace(options or ReadOptions(), **{key: value for key, value in given.items() if value is not None})
    epochs = epochs_choice(options.epochs_as)
    fmt = common_format(paths, format)
    if fmt not in SAMPLE_READERS:
        raise SeedscopeError(f"{paths[0]} is {fmt}, which holds one answer per example; sampled generations are read "
                             f"from {', '.join(SAMPLE_READERS)} files")
    options = replace(options, epochs_as=epochs or "samples")
    with recorded() as notes:
        check_epochs_as(fmt, epochs, samples=True)
        table = check_sample_table(SAMPLE_READERS[fmt](paths, options), ", ".join(map(str, paths)))
        note_unequal_counts(table)
    table = table.sort_values([RUN, EXAMPLE_ID, SAMPLE], kind="stable").reset_index(drop=True)
    table.attrs["notes"] = notes
    return table


def epochs_choice(value: str | None) -> str | None:
    """``samples`` or ``runs`` (None stays None: each reader's default); anything else is an error."""
    if value is None:
        return None
    key = str(getattr(value, "value", value)).strip().lower()
    if key not in EPOCHS_AS:
        raise SeedscopeError(f"--epochs-as takes 'samples' (the epochs of a log are samples of one run) or 'runs' "
                             f"(each epoch one run), not {value!r}")
    return key


def check_epochs_as(fmt: str, epochs_as: str | None, *, samples: bool) -> None:
    """A note when ``epochs_as`` is given for a format without epochs; with ``samples`` False (the prediction table:
    one answer per run and example), an error for epochs as samples."""
    if epochs_as is not None and fmt != "inspect":
        warnings.warn(f"--epochs-as is for inspect_ai logs; {fmt} files have no epochs, so it is ignored",
                      IgnoredOptionWarning, stacklevel=3)
    elif epochs_as == "samples" and not samples:
        raise SeedscopeError("--epochs-as samples reads an inspect_ai log's epochs as the sampled generations of one "
                             "run, which only the sample analysis reads (--k; read_samples); the seed-effect analysis "
                             "reads each epoch as a run")


def note_unequal_counts(table: pd.DataFrame) -> None:
    """A note when items (of a run) hold different numbers of samples: each is estimated with its own n."""
    keys = [column for column in ("task", RUN, EXAMPLE_ID) if column in table.columns]
    counts = table.groupby(keys, sort=False, dropna=False).size()
    if counts.nunique() > 1:
        most = int(counts.max())
        fewer = counts[counts < most]
        first = fewer.index[0]
        item = dict(zip(keys, first if isinstance(first, tuple) else (first,)))
        warnings.warn(
            f"items hold different numbers of samples ({int(counts.min())} to {most}; {len(fewer)} of {len(counts)} "
            f"hold fewer than {most}, e.g. example {item[EXAMPLE_ID]!r} of run {item[RUN]!r} with {int(fewer.iloc[0])}): "
            "the estimators are computed per item, each with its own n",
            UnevenSamplesWarning, stacklevel=3)
