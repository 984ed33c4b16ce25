"""Reading: every file a user brings, into the tables the analysis works on. The only layer that reads paths.

>>> from seedscope.io import read_predictions
>>> table = read_predictions(["seed1.csv", "seed2.csv"])             # one file per run
>>> table = read_predictions(["out/seed1", "out/seed2"])             # lm-eval --log_samples folders
>>> table = read_predictions(["s1/predict_results_rte.txt", "s2/predict_results_rte.txt"],
...                          data_dir="data")                       # run_glue.py + gold dev labels
>>> samples = read_samples("logs/arith.eval")                        # sampled generations: the sample table

Split by what is read: :mod:`seedscope.io.results` reads results (predictions and scores), whose readers one
registry (:data:`READERS`) maps to each prediction format; score tables, task texts and experiment stores are read
there by the same loaders and rules; :mod:`seedscope.io.samples` reads sampled generations (several per example,
:func:`read_samples`). What both use sits here: the options and sources (``common``), format detection (``detect``)
and input validation (``validate``). See docs/how-to/inputs.md.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Callable, Iterable

import pandas as pd

from seedscope.errors import IgnoredOptionWarning, SeedscopeError
from seedscope.io.results.checks import merge_sources
from seedscope.io.results.columnar import read_aligned
from seedscope.io.common import ReadOptions, Source, pick_column, require_readable
from seedscope.io.detect import (
    all_of_one_kind,
    FORMATS,
    common_format,
    detect_format,
    folder_format,
    normalise_format,
    table_files,
)
from seedscope.io.results.experiment import attach_prompts, read_store
from seedscope.io.results.helm import read_helm
from seedscope.io.results.inspect_logs import read_inspect
from seedscope.io.results.lighteval import read_lighteval
from seedscope.io.results.lm_eval import read_lm_eval
from seedscope.io.results.lm_eval_perplexity import is_perplexity_log
from seedscope.io.results.run_glue import read_run_glue
from seedscope.io.results.run_scores import (
    RunScores,
    looks_like_run_scores,
    read_head,
    read_run_scores,
)
from seedscope.io.samples.tables import holds_sample_tables, read_sample_tables
from seedscope.io.samples import (
    SAMPLE_READERS,
    check_epochs_as,
    epochs_choice,
    holds_sampled_generations,
    read_samples,
)
from seedscope.io.results.scores import read_score_table, read_system_scores
from seedscope.io.results.tabular import FORMATS as TABLE_FORMATS, PREDICTION_NAMES, read_tabular
from seedscope.io.results.texts import attach_texts, task_texts
from seedscope.io.validate import names_unreadable_files
from seedscope.notes import recorded
from seedscope.predictions import AlignedRuns

__all__ = [
    "FORMATS", "READERS", "RunScores", "SAMPLE_READERS", "attach_prompts", "attach_texts", "detect_format", "holds_predictions",
    "holds_run_scores", "holds_sample_tables", "holds_sampled_generations", "read_predictions", "read_sample_tables", "read_samples",
    "read_aligned_runs", "read_run_scores", "read_score_table", "read_sweep", "read_system_scores", "task_texts",
]

#: format → reader of a list of paths (all of that format) into checked sources
READERS: dict[str, Callable[[list[Path], ReadOptions], list[Source]]] = {
    "csv": lambda paths, options: read_tabular(paths, "csv", options),
    "tsv": lambda paths, options: read_tabular(paths, "tsv", options),
    "jsonl": lambda paths, options: read_tabular(paths, "jsonl", options),
    "parquet": lambda paths, options: read_tabular(paths, "parquet", options),
    "lm-eval": read_lm_eval,
    "inspect": read_inspect,
    "helm": read_helm,
    "lighteval": read_lighteval,
    "run-glue": read_run_glue,
    "store": read_store,
}
#: the formats whose per-example verdicts come in several metrics, of which ``metric`` picks one
METRIC_FORMATS = ("inspect", "helm", "lighteval")


@names_unreadable_files
def read_predictions(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    format: str | None = None,
    run_column: str | None = None,
    id_column: str | None = None,
    prediction_column: str | None = None,
    label_column: str | None = None,
    cluster_column: str | None = None,
    prob_columns: str | dict[str, str] | None = None,
    task: str | None = None,
    task_type: str | None = None,
    data_dir: str | os.PathLike | None = None,
    filter: str | None = None,
    run_names: Iterable[str] | None = None,
    runs_by: str | None = None,
    metric: str | None = None,
    epochs_as: str | None = None,
    options: ReadOptions | None = None,
) -> pd.DataFrame:
    """One long prediction table (run, example_id, prediction, label, prob_<class>, task, model).

    ``paths``: files or folders, all of one format (detected, or ``format=`` one of
    :data:`FORMATS`). The ``*_column`` options name a table's columns when the defaults are not
    found; ``cluster_column`` groups examples for clustered standard errors; ``prob_columns`` is a column prefix, a list-valued column, or ``{column: class}``.
    ``task`` picks a task (lm-eval, store, multi-task tables) or names it (run_glue files
    without a task in their name); ``data_dir`` is where run_glue's gold dev files live;
    ``filter`` picks the lm-eval filter; ``run_names`` names one-run-per-input runs;
    ``runs_by="file"`` reads every lm-eval samples file as one run of one task; ``metric`` picks an
    inspect_ai log's scorer (default: its first), a HELM per-instance stat (default: exact_match)
    or a lighteval metric (default: the choices' argmax for multiple choice, else the first metric);
    ``epochs_as`` must stay ``"runs"`` (each inspect_ai epoch a run): epochs as samples are read by :func:`read_samples`.
    Choices made (such as the lm-eval filter used) are said as :class:`~seedscope.errors.SeedscopeWarning` s
    (:mod:`warnings`), and their texts are kept in ``table.attrs["notes"]``.

    Parameters
    ----------
    paths : path or list of paths
        Files or folders, all of one format.
    format : str, optional
        One of :data:`FORMATS`; default: detected from the files.
    run_column, id_column, prediction_column, label_column, cluster_column : str, optional
        Column names, when a table's are not found by default.
    **other options
        ``prob_columns``, ``task``, ``data_dir``, ``filter``, ``run_names``, ``runs_by``, ``metric``, ``epochs_as``, as above.
    options : ReadOptions, optional
        All of these at once; a keyword given beside it wins.

    Returns
    -------
    pandas.DataFrame
        The long prediction table, one row per (run, example).

    Examples
    --------
    >>> from seedscope import read_predictions
    >>> from glob import glob
    >>> runs = sorted(glob("examples/rte/*.csv"))  # one file per seed, in the repository
    >>> table = read_predictions(runs)
    >>> table["run"].nunique(), len(table)
    (5, 1000)
    """
    paths = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not paths:
        raise SeedscopeError("no input given: name at least one predictions file or folder")
    paths = expand_inputs(paths, format)
    given = dict(run_column=run_column, id_column=id_column, prediction_column=prediction_column,
                 label_column=label_column, cluster_column=cluster_column, prob_columns=prob_columns, task=task,
                 task_type=task_type, data_dir=data_dir, filter=filter,
                 run_names=tuple(run_names) if run_names is not None else None, runs_by=runs_by, metric=metric,
                 epochs_as=epochs_as)
    options = replace(options or ReadOptions(), **{key: value for key, value in given.items() if value is not None})
    options = replace(options, runs_by=_runs_by(options.runs_by), epochs_as=epochs_choice(options.epochs_as))
    fmt = common_format(paths, format)
    with recorded() as notes:
        check_epochs_as(fmt, options.epochs_as, samples=False)
        table = merge_sources(READERS[fmt](paths, options), options.task_type)
        if options.metric is not None and fmt not in METRIC_FORMATS:
            warnings.warn(f"--metric picks an inspect_ai scorer, a HELM stat or a score table's column; {fmt} "
                          "predictions have neither, so it is ignored", IgnoredOptionWarning, stacklevel=2)
    table.attrs["notes"] = notes
    return table


@names_unreadable_files
def read_aligned_runs(
    paths: Iterable[str | os.PathLike], *, format: str | None = None, options: ReadOptions | None = None, **keywords
) -> AlignedRuns | None:
    """The fast path of :func:`read_predictions` + :func:`seedscope.predictions.align_runs` for
    one plain classification file per run (Parquet, CSV, TSV): aligned int8 codes straight from
    pyarrow. None when the inputs need the long-table readers (see :mod:`seedscope.io.results.columnar`);
    ``options`` are those of :func:`read_predictions`.

    Parameters
    ----------
    paths : list of paths
        One plain classification file per run.
    format : str, optional
        The files' format; default: detected.
    options : ReadOptions, optional
        As for :func:`read_predictions` (or the same as keywords).

    Returns
    -------
    AlignedRuns or None
        The runs as S × N class codes on the same sorted example ids, or None.

    Examples
    --------
    >>> from seedscope import read_aligned_runs
    >>> from glob import glob
    >>> runs = sorted(glob("examples/rte/*.csv"))  # one file per seed, in the repository
    >>> aligned = read_aligned_runs(runs)
    >>> aligned.n_runs, len(aligned.example_ids), aligned.classes
    (5, 200, ['entailment', 'not_entailment'])
    """
    paths = [Path(p) for p in paths]
    paths = expand_inputs(paths, format)
    fmt = common_format(paths, format)
    if options is None:
        if keywords.get("run_names") is not None:
            keywords["run_names"] = tuple(keywords["run_names"])
        options = ReadOptions(**keywords)
    return read_aligned(paths, fmt, options)


@names_unreadable_files
def holds_run_scores(paths: Iterable[str | os.PathLike], format: str | None = None) -> bool:
    """True when every input is a per-run score table (numeric columns, no example ids or predictions), or lm-eval
    logs of a perplexity task (one log-likelihood per document: a score per run).

    Such inputs go to :func:`read_run_scores`; a mix of them and prediction files is refused.
    """
    paths = [Path(p) for p in paths]
    for path in paths:
        require_readable(path)
    fmt = normalise_format(format) if format is not None else None
    if fmt is not None and fmt not in (*TABLE_FORMATS, "lm-eval"):
        return False
    # a framework's log is recognised by its content first: an inspect_ai .json log is no table of scores
    kinds = {path: fmt or _format_or_none(path) for path in paths}
    found = {path: is_perplexity_log(path) if kinds[path] == "lm-eval" else
             kinds[path] in TABLE_FORMATS and looks_like_run_scores(path, fmt) for path in paths}
    return all_of_one_kind(found, "per-run scores", "per-example predictions")


def _format_or_none(path: Path) -> str | None:
    try:
        return detect_format(path)
    except SeedscopeError:
        return None


def _runs_by(value: str | None) -> str | None:
    if value is None or value.strip().lower() in ("file", "files"):
        return None if value is None else "file"
    raise SeedscopeError(f"--runs-by takes 'file' (each lm-eval samples file is one run), not {value!r}")


@names_unreadable_files
def holds_predictions(path: str | os.PathLike, format: str | None = None, *, system_column: str = "system") -> bool:
    """True for a folder (store, lm-eval output, per-run files), an lm-eval or run_glue file, or a
    table with a prediction column (and no ``system_column``: that is a long score table):
    inputs whose per-example correctness is computed, not given."""
    path = Path(path)
    require_readable(path)
    if path.is_dir():
        return True
    fmt = common_format([path], format)
    if fmt not in TABLE_FORMATS:
        return True
    columns = [str(c) for c in read_head(path, fmt).columns]
    return system_column not in columns and pick_column(columns, None, PREDICTION_NAMES, path) is not None


@names_unreadable_files
def read_sweep(path: str | os.PathLike, *, format: str | None = None, **options) -> pd.DataFrame | AlignedRuns:
    """One sweep: a store, a long table, a framework's logs, or a plain folder of per-run prediction files.

    A folder of plain per-run classification files comes back as aligned codes, read column by
    column (:func:`read_aligned_runs`); everything else as a prediction table. ``options`` are
    those of :func:`read_predictions` (``task``, ``run_column``, ``filter`` …).
    """
    path = Path(path)
    inputs = expand_inputs([path], format, run_folders=True)
    if len(inputs) > 1 or inputs[0] != path:
        aligned = read_aligned_runs(inputs, format=format, **options)
        if aligned is not None:
            return aligned
    return read_predictions(inputs, format=format, **options)


def _inputs(path: Path, format: str | None, run_folders: bool) -> list[Path]:
    """What one input stands for: the path itself; a plain folder's prediction tables (one run each); or, with
    ``run_folders``, for a folder of run folders of one format (``out/seed1/``, ``out/seed2/`` … of lm-eval),
    those folders, each one run."""
    if not path.is_dir() or format is not None:
        return [path]
    found = folder_format(path)
    if found is None:
        tables = table_files(path)
        if not tables:
            raise SeedscopeError(f"{path} holds no experiment store and no prediction files (framework logs or "
                                 "tables: .csv, .tsv, .jsonl, .json, .parquet)")
        return tables
    runs = sorted(d for d in path.iterdir() if d.is_dir()) if run_folders else []
    if found != "store" and len(runs) >= 2 and all(_format_or_none(d) == found for d in runs):
        return runs
    return [path]


def expand_inputs(paths: list[Path], format: str | None, *, run_folders: bool = False) -> list[Path]:
    """Every input checked (:func:`seedscope.io.validate.check_input`), a plain folder as its prediction tables."""
    for path in paths:
        require_readable(path)
    return [found for path in paths for found in _inputs(path, format, run_folders)]
