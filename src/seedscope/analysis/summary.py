"""Several tasks side by side, laid out like the paper (Tables 1 and 7), plus the
correlation of training-set size with VAR, CON and CCON across tasks (paper §5.3).

Values are fractions (the paper prints percentages). Table 1: rows ζ (the task's primary
metric: MCC for CoLA, accuracy otherwise), VAR (population std of ζ), CON, CCON; one
column per task. Table 7: one row per task; P, R, F1 (macro), Accuracy, CON and CCON, each
with its ± spread (VAR for the macro metrics, the population std of the pairwise values for
CON and CCON). As in the paper, a task whose primary metric is not accuracy (CoLA: MCC) shows
that metric in the Accuracy column and no P, R, F1. :func:`compare_variants` sets the same
quantities of several variants of each task side by side (with and without calibration;
fine-tuned and prompted).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from seedscope.analysis.seed_effects import Analysis, analyze_groups
from seedscope.tasks import find_task
from seedscope.errors import SeedscopeError

TABLE7_COLUMNS = {
    "P": "precision_macro",
    "R": "recall_macro",
    "F1": "f1_macro",
    "Accuracy": "accuracy",
}
#: fewest tasks — distinct training-set sizes: groups of one task under several models or implementations count
#: once — for which a correlation across tasks is reported
MIN_TASKS_FOR_CORRELATION = 3


@dataclass
class TaskSummary:
    """``table1`` (rows ζ, VAR, CON, CCON × task columns), ``table7`` (task rows × (quantity,
    mean/±) columns), ``correlation`` (rows VAR, CON, CCON; columns r, p_value, n_tasks) and
    the per-task ``analyses``.

    Parameters
    ----------
    table1, table7, correlation : pandas.DataFrame
        The tables described above.
    analyses : dict
        Task → :class:`Analysis`.
    train_sizes : pandas.Series, optional
        The training sizes correlated.

    Returns
    -------
    TaskSummary
        Built by :func:`summarize_tasks`.

    Examples
    --------
    >>> from seedscope import read_predictions, summarize_tasks
    >>> summary = summarize_tasks(read_predictions("examples/cb.csv"), n_boot=200)
    >>> list(summary.analyses)
    ['cb']
    """

    table1: pd.DataFrame
    table7: pd.DataFrame
    correlation: pd.DataFrame
    analyses: dict[str, Analysis]
    #: training-set size per task label (NaN when unknown), as used for ``correlation``
    train_sizes: pd.Series | None = None


def _group_label(key: tuple, several_models: bool) -> str:
    task, model = key
    return f"{task} ({model})" if several_models else str(task)


def summarize_tasks(
    predictions: pd.DataFrame | Mapping[str, Analysis],
    *,
    train_sizes: Mapping[str, float] | None = None,
    log_size: bool = False,
    **options,
) -> TaskSummary:
    """Paper-style multi-task summary of several prediction sets.

    ``predictions`` is a long prediction table with a ``task`` column (and optionally
    ``model``), analysed per group by :func:`~seedscope.analysis.seed_effects.analyze_groups`,
    or a mapping task name → :class:`~seedscope.analysis.seed_effects.Analysis`. ``train_sizes``
    maps task name → the number of training examples the runs used; tasks missing from it get
    the registry's published training-split size.
    ``log_size`` correlates log10(size) instead of the size (the paper plots a log scale).
    ``options`` go to :func:`seedscope.analyze`.

    Parameters
    ----------
    predictions : pandas.DataFrame or mapping
        A long table with a ``task`` column, or task → :class:`Analysis`.
    train_sizes : mapping, optional
        Task → training examples used.
    log_size : bool, default False
        Correlate log10(size) instead of the size.
    **options
        Those of :func:`analyze`.

    Returns
    -------
    TaskSummary

    Examples
    --------
    >>> from seedscope import read_predictions, summarize_tasks
    >>> summary = summarize_tasks(read_predictions("examples/cb.csv"), n_boot=200)
    >>> summary.table1.index.tolist(), summary.table1.columns.tolist()
    (['zeta', 'VAR', 'CON', 'CCON'], ['cb'])
    """
    if isinstance(predictions, pd.DataFrame):
        if "task" not in predictions.columns:
            raise SeedscopeError("a multi-task summary needs a 'task' column naming each prediction's task")
        analyses = _analyze_tasks(predictions, options)
    else:
        analyses = dict(predictions)
    if not analyses:
        raise SeedscopeError("a multi-task summary needs at least one task")
    sizes = {name: _train_size(name, train_sizes) for name in analyses}
    table1 = pd.DataFrame({name: _table1_column(a) for name, a in analyses.items()})
    table7 = pd.DataFrame.from_dict({name: _table7_row(a) for name, a in analyses.items()}, orient="index")
    table7.columns = pd.MultiIndex.from_tuples(table7.columns, names=["quantity", "statistic"])
    table7.index.name = "task"
    correlation = _size_correlation(table1, sizes, log_size)
    return TaskSummary(table1, table7, correlation, analyses, pd.Series(sizes, dtype=float, name="train_size"))


def _analyze_tasks(table: pd.DataFrame, options: dict) -> dict[str, Analysis]:
    several_models = "model" in table.columns and table["model"].nunique(dropna=False) > 1
    return {_group_label(key, several_models): a for key, a in analyze_groups(table, **options).items()}


def _train_size(name: str, train_sizes: Mapping[str, float] | None) -> float:
    """The size given for the label (``"rte (roberta)"``) or its task, else the registry's published size."""
    task = name.split(" (")[0]
    for key in (name, task):
        if train_sizes and key in train_sizes:
            return float(train_sizes[key])
    spec = find_task(task)
    return float(spec.train_size) if spec is not None else np.nan


def _table1_column(analysis: Analysis) -> pd.Series:
    micro = analysis.micro.iloc[0]
    if analysis.primary_metric is None:
        zeta = var = np.nan
    else:
        zeta, var = analysis.macro.loc[analysis.primary_metric, ["mean", "var_published"]]
    return pd.Series({"zeta": zeta, "VAR": var, "CON": micro["con"], "CCON": micro["ccon"]})


def _table7_row(analysis: Analysis) -> dict:
    row = {}
    primary = analysis.primary_metric
    columns = dict(TABLE7_COLUMNS)
    if primary is not None and primary != "accuracy":  # the paper: "CoLA employs MCC as the accuracy"
        columns = {"P": None, "R": None, "F1": None, "Accuracy": primary}
    for label, metric in columns.items():
        found = metric in analysis.macro.index
        row[(label, "mean")] = analysis.macro.loc[metric, "mean"] if found else np.nan
        row[(label, "pm")] = analysis.macro.loc[metric, "var_published"] if found else np.nan
    micro = analysis.micro.iloc[0]
    for label, column in (("CON", "con"), ("CCON", "ccon")):
        row[(label, "mean")] = micro[column]
        row[(label, "pm")] = micro[f"{column}_pair_std"]
    return row


def _size_correlation(table1: pd.DataFrame, sizes: dict[str, float], log_size: bool) -> pd.DataFrame:
    """Pearson r (and its p-value) of training-set size with VAR, CON and CCON across tasks."""
    size = pd.Series(sizes, dtype=float)
    if log_size:
        size = np.log10(size)
    rows = {}
    for quantity in ("VAR", "CON", "CCON"):
        values = table1.loc[quantity]
        usable = size.notna() & values.notna()
        n = int(usable.sum())
        if size[usable].nunique() >= MIN_TASKS_FOR_CORRELATION and values[usable].nunique() > 1:
            from scipy import stats

            result = stats.pearsonr(size[usable], values[usable])
            rows[quantity] = {"r": float(result.statistic), "p_value": float(result.pvalue), "n_tasks": n}
        else:
            rows[quantity] = {"r": np.nan, "p_value": np.nan, "n_tasks": n}
    frame = pd.DataFrame.from_dict(rows, orient="index")
    frame.index.name = "quantity"
    return frame


def compare_variants(variants: Mapping[str, Mapping[str, Analysis]]) -> pd.DataFrame:
    """One row per (task, variant): ζ (the primary metric's mean), VAR, CON, CCON, the seed and the
    example-sampling parts of the score's variance (and the seed share), and the majority baseline.

    ``variants`` maps a variant's name (e.g. ``"uncalibrated"``, ``"calibrated"``) to its analyses,
    task label → :class:`~seedscope.analysis.seed_effects.Analysis`; tasks keep their first order.
    """
    labels = list(dict.fromkeys(label for analyses in variants.values() for label in analyses))
    rows = []
    for label in labels:
        for variant, analyses in variants.items():
            if label not in analyses:
                continue
            analysis = analyses[label]
            column = _table1_column(analysis)
            split = analysis.variance_split if analysis.variance_split is not None else pd.Series(dtype=float)
            metric = analysis.primary_metric
            rows.append({
                "task": label, "variant": variant, "metric": metric, "runs": analysis.aligned.n_runs,
                "zeta": column["zeta"], "VAR": column["VAR"], "CON": column["CON"], "CCON": column["CCON"],
                "seed_variance": split.get("seed_variance", np.nan),
                "example_variance": split.get("example_variance", np.nan),
                "seed_share": split.get("seed_share", np.nan),
                "baseline": analysis.baseline.get(metric, np.nan) if metric is not None else np.nan,
            })
    if not rows:
        raise SeedscopeError("nothing to compare: no variant has an analysed task")
    return pd.DataFrame(rows).set_index(["task", "variant"])
