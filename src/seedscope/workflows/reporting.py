"""``build_report(source, html=...)``: read predictions, analyse them, lay the report out, write it.

The workflow of ``seedscope report`` as one Python call: :mod:`seedscope.io` reads the files
(and a store's recorded environment and factor-study scores), :mod:`seedscope.analysis` and
:mod:`seedscope.factor_study` compute, :mod:`seedscope.report` lays out and writes.
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from seedscope.analysis.compare import compare_systems
from seedscope.analysis.run_scores import analyze_run_scores
from seedscope.analysis.seed_effects import Analysis, analyze
from seedscope.analysis.subsets import SubsetVariance
from seedscope.analysis.summary import TaskSummary, summarize_tasks
from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.factor_study.importance import FactorAnalysis, analyze_factors
from seedscope.factor_study.scores import study_from_table
from seedscope.io import attach_prompts, read_aligned_runs, read_predictions, read_run_scores, task_texts
from seedscope.io.results.experiment import StoreContext, store_context
from seedscope.report.build import Progress, Report, assemble, task_of
from seedscope.report.scores import ScoreReport, assemble_scores
from seedscope.report.write import check_fig_format, write_outputs
from seedscope.workflows.stores import analysable_groups

#: task name given to predictions that carry no ``task`` column
DEFAULT_TASK = "predictions"


def _inputs(source, *, task: str | None, data_dir, intersect: bool, options: dict,
            read_options: dict) -> tuple[TaskSummary, pd.DataFrame | None, FactorAnalysis | str | None, list[str]]:
    """(summary, recorded environment, factor analysis, notes) from store directories, prediction
    files, a table or analyses; the last three only come from stores."""
    if isinstance(source, TaskSummary):
        return source, None, None, []
    if isinstance(source, Analysis):
        source = {task or DEFAULT_TASK: source}
    if isinstance(source, Mapping):
        if not source or not all(isinstance(a, Analysis) for a in source.values()):
            raise SeedscopeError("a mapping passed to build_report must map task names to Analysis results")
        return summarize_tasks(dict(source)), None, None, []
    context, notes = StoreContext(), []
    if isinstance(source, pd.DataFrame):
        table = source
    else:
        paths = [Path(p) for p in ([source] if isinstance(source, (str, os.PathLike)) else list(source))]
        # one plain file per run: aligned codes straight from pyarrow, as `analyze` reads them
        aligned = None if intersect or task is not None else read_aligned_runs(paths, **read_options)
        if aligned is not None:
            return summarize_tasks({DEFAULT_TASK: analyze(aligned, **options)}), None, None, []
        table, _ = attach_prompts(read_predictions(paths, task=task, data_dir=data_dir, **read_options), paths)
        table, notes = analysable_groups(table, paths)
        context = store_context(paths)
    factors = context.factor_scores
    if isinstance(factors, tuple):
        frame, info = factors
        try:
            factors = analyze_factors(study_from_table(frame, metric=info["metric"], chance=info["chance"]))
        except SeedscopeError as error:
            factors = str(error)
    if "task" not in table.columns:
        table = table.assign(task=task or DEFAULT_TASK)
    summary = summarize_tasks(table, intersect=intersect, train_sizes=context.train_sizes or None, **options)
    return summary, context.environment, factors, notes


def build_report(
    source,
    html: str | os.PathLike | None = None,
    latex_dir: str | os.PathLike | None = None,
    figures_dir: str | os.PathLike | None = None,
    fig_format: str = "png",
    *,
    unstable_csv: str | os.PathLike | None = None,
    task: str | None = None,
    data_dir: str | os.PathLike | None = None,
    intersect: bool = False,
    factors: FactorAnalysis | None = None,
    subsets: SubsetVariance | None = None,
    top_k: int = 20,
    title: str = "seedscope report",
    progress: Progress | None = None,
    read_options: Mapping[str, Any] | None = None,
    **analysis_options,
) -> Report:
    """Build the report of ``source`` and write the requested outputs; returns the :class:`Report`.

    ``source``: an experiment store directory, prediction file(s) (read by
    :func:`seedscope.io.read_predictions`), a prediction table, an :class:`~seedscope.Analysis`,
    a mapping task → Analysis or a :class:`~seedscope.analysis.summary.TaskSummary`. ``task``
    names the task of predictions without a ``task`` column; ``data_dir`` is where task texts
    are read for the unstable examples; ``factors`` a
    :class:`~seedscope.factor_study.importance.FactorAnalysis` (found by itself in a store of
    ``seedscope factors run``) and ``subsets`` a
    :class:`~seedscope.analysis.subsets.SubsetVariance` add their sections. Outputs: ``html``
    (one self-contained file), ``latex_dir`` (Table 1 / Table 7 / size correlation as booktabs
    ``.tex`` plus ``.csv`` and ``.md``), ``figures_dir`` (every figure as ``fig_format``),
    ``unstable_csv``. ``read_options`` go to :func:`seedscope.io.read_predictions` (``format``,
    ``run_column`` …), ``analysis_options`` to :func:`seedscope.analyze`.

    Parameters
    ----------
    source : path, table, Analysis, mapping or TaskSummary
        What to report.
    html : path, optional
    latex_dir, figures_dir : path, optional
    fig_format : str, default "png"
    **other options
        As above, and those of :func:`analyze`.

    Returns
    -------
    Report

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from seedscope import build_report, read_predictions
    >>> from glob import glob
    >>> runs = sorted(glob("examples/rte/*.csv"))  # one file per seed, in the repository
    >>> page = pathlib.Path(tempfile.mkdtemp()) / "report.html"
    >>> report = build_report(read_predictions(runs), html=page, n_boot=200)
    >>> page.exists()
    True
    """
    check_fig_format(fig_format)
    if top_k < 0:
        raise SeedscopeError(f"the number of unstable examples to list must be 0 or more, not {top_k}")
    if progress is not None:
        progress("reading and analysing predictions", 0, None)
    summary, environment, found, notes = _inputs(source, task=task, data_dir=data_dir, intersect=intersect,
                                          options=analysis_options, read_options=dict(read_options or {}))
    texts = {task_of(label): task_texts(task_of(label), data_dir) for label, analysis in summary.analyses.items()
             if "text" not in analysis.stability.columns}
    report = assemble(summary, environment=environment, factors=factors if factors is not None else found,
                      subsets=subsets, top_k=top_k, texts=texts, title=title, progress=progress)
    report.notes = notes + report.notes
    write_outputs(report, html=html, latex_dir=latex_dir, figures_dir=figures_dir, fig_format=fig_format,
                  unstable_csv_path=unstable_csv)
    return report


def build_score_report(
    paths,
    html: str | os.PathLike | None = None,
    latex_dir: str | os.PathLike | None = None,
    figures_dir: str | os.PathLike | None = None,
    fig_format: str = "png",
    *,
    metric: str | None = None,
    task: str | None = None,
    title: str = "seedscope report",
    n_boot: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    read_options: Mapping[str, Any] | None = None,
) -> ScoreReport:
    """The report of per-run score tables (read by :func:`seedscope.io.read_run_scores`): the
    macro part per system and, with two or more systems of one task, their comparison on
    ``metric`` (default: the first score column).

    Parameters
    ----------
    paths : list of paths
        Per-run score tables.
    html, latex_dir, figures_dir, fig_format
        As for :func:`build_report`.
    **other options
        Reading (as :func:`read_run_scores`) and the compared ``metric``.

    Returns
    -------
    ScoreReport

    Examples
    --------
    >>> from seedscope import build_score_report
    >>> import pandas as pd
    >>> scores = pd.DataFrame({"system": ["A"] * 3 + ["B"] * 3, "run": [1, 2, 3] * 2,
    ...                        "accuracy": [0.80, 0.82, 0.85, 0.78, 0.83, 0.80]})
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> scores.to_csv(path, index=False)
    >>> report = build_score_report([path], html=path.with_suffix(".html"))
    >>> path.with_suffix(".html").exists()
    True
    """
    check_fig_format(fig_format)
    options = dict(read_options or {})
    scores = read_run_scores(paths, task=task, metric=[metric] if metric else None, **options)
    summaries = analyze_run_scores(scores.table, scores.metrics, n_boot=n_boot, confidence=confidence, seed=seed)
    comparison, notes = None, list(scores.notes)
    if len(scores.systems) >= 2 and len(scores.tasks) <= 1:
        per_run, chosen = scores.series(metric or scores.metrics[0])
        comparison = compare_systems(per_run, metric=chosen, paired=None if scores.paired else False, n_boot=n_boot,
                                     confidence=confidence, seed=seed)
    elif len(scores.tasks) > 1:
        notes.append("several tasks: systems are compared within one task only (pick one with --task)")
        warnings.warn(notes[-1], ReadingChoiceWarning, stacklevel=2)
    report = assemble_scores(summaries, comparison, confidence=confidence, notes=notes, title=title)
    write_outputs(report, html=html, latex_dir=latex_dir, figures_dir=figures_dir, fig_format=fig_format)
    return report
