"""Macro seed effects of per-run scores (one number per run and metric, no per-example predictions).

A published list of seeds' scores supports the macro part of an analysis: mean, VAR, sample
std, CV, bootstrap and Student-t intervals of the mean and the IQM with its stratified
bootstrap CI. The micro part (CON, CCON), error bars over examples and the degenerate-run
checks need per-example predictions; :data:`NEEDS_PREDICTIONS` says so wherever scores are shown.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from seedscope.analysis.aggregates import interquartile_mean_ci
from seedscope.errors import SeedscopeError
from seedscope.metrics.macro import summarize_runs
from seedscope.serialize import json_ready

SYSTEM, RUN, TASK = "system", "run", "task"
NEEDS_PREDICTIONS = (
    "per-run scores give the macro part only: CON / CCON, error bars over examples, the variance split and "
    "degenerate-run checks need per-example predictions"
)


@dataclass
class ScoreSummary:
    """One system's (and task's) runs: ``per_run`` (run × metric) and ``macro`` (metric × statistic).

    Parameters
    ----------
    task : str or None
    system : str
    per_run, macro : pandas.DataFrame

    Returns
    -------
    ScoreSummary
        Built by :func:`analyze_run_scores`.

    Examples
    --------
    >>> from seedscope import analyze_run_scores
    >>> import pandas as pd
    >>> scores = pd.DataFrame({"system": ["A"] * 3 + ["B"] * 3, "run": [1, 2, 3] * 2,
    ...                        "accuracy": [0.80, 0.82, 0.85, 0.78, 0.83, 0.80]})
    >>> summary = analyze_run_scores(scores, ["accuracy"], n_boot=200)[0]
    >>> round(float(summary.macro.loc["accuracy", "mean"]), 4)
    0.8233
    """

    task: str | None
    system: str
    per_run: pd.DataFrame
    macro: pd.DataFrame

    @property
    def label(self) -> str:
        return f"{self.task} / {self.system}" if self.task is not None else self.system

    def to_dict(self) -> dict:
        return json_ready({
            "task": self.task,
            "system": self.system,
            "runs": list(self.per_run.index),
            "metrics": {name: dict(row) for name, row in self.macro.iterrows()},
            "per_run": {run: dict(row) for run, row in self.per_run.iterrows()},
        })


def analyze_run_scores(
    table: pd.DataFrame, metrics: list[str], *, n_boot: int = 10_000, confidence: float = 0.95, seed: int = 0
) -> list[ScoreSummary]:
    """Macro summary (with IQM and its CI) per (task, system) of a per-run score table.

    ``table``: columns system, run, optional task, and the ``metrics``. Each group needs two
    runs or more.

    Parameters
    ----------
    table : pandas.DataFrame
        Columns system, run, optional task, and the metrics.
    metrics : list of str
        The score columns.
    n_boot, confidence, seed
        As for :func:`analyze`.

    Returns
    -------
    list of ScoreSummary
        One per (task, system).

    Examples
    --------
    >>> from seedscope import analyze_run_scores
    >>> import pandas as pd
    >>> scores = pd.DataFrame({"system": ["A"] * 3 + ["B"] * 3, "run": [1, 2, 3] * 2,
    ...                        "accuracy": [0.80, 0.82, 0.85, 0.78, 0.83, 0.80]})
    >>> [s.system for s in analyze_run_scores(scores, ["accuracy"], n_boot=200)]
    ['A', 'B']
    """
    keys = [c for c in (TASK, SYSTEM) if c in table.columns]
    summaries = []
    for key, group in table.groupby(keys, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        named = dict(zip(keys, key))
        label = " / ".join(map(str, key))
        if len(group) < 2:
            raise SeedscopeError(
                f"{label} has one run; a seed effect needs two or more (if rows of several systems were merged or "
                "split wrongly, name the columns that tell systems apart with --system-column)"
            )
        per_run = group.set_index(RUN)[metrics].astype(float)
        macro = summarize_runs(per_run, n_boot=n_boot, confidence=confidence, seed=seed)
        iqm = [interquartile_mean_ci(per_run[m], n_boot=n_boot, confidence=confidence, seed=seed) for m in metrics]
        macro[["iqm", "iqm_ci_low", "iqm_ci_high"]] = pd.DataFrame(iqm, index=macro.index)
        summaries.append(ScoreSummary(named.get(TASK), str(named[SYSTEM]), per_run, macro))
    return summaries
