"""Macro and micro seed effects of one prediction set (S runs of one task and model), as DataFrames.

>>> import seedscope
>>> result = seedscope.analyze(table)          # long table: run, example_id, prediction, label
>>> result.macro                               # mean, VAR (population std), sample std, CV, CI
>>> result.micro                               # mean CON / CCON over run pairs and their spread
>>> result.most_unstable(10)                   # the examples that flip most between seeds

All values are fractions in [0, 1] (accuracy 0.6, CON 0.2), never percentages.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.validation import check_power, validate_params
from seedscope.serialize import json_ready
from seedscope.metrics import macro as macro_metrics
from seedscope.metrics import micro as micro_metrics
from seedscope.metrics.pairs import EXACT_PAIR_RUNS, PAIR_SAMPLE
from seedscope.metrics.stability import examples_ahead, most_unstable
from seedscope.analysis.micro_effects import (
    MICRO_COLUMNS,
    check_matrix_runs,
    check_pair_sample,
    micro_effects,
    pair_distribution,
)
from seedscope.analysis.error_bars import (
    clustered_standard_error,
    minimum_detectable_difference,
    standard_error,
    variance_split,
)
from seedscope.predictions import CLUSTER, EXAMPLE_ID, TEXT, AlignedRuns, PredictionType, align_runs, normal_ids
from seedscope.tasks import example_clusters, find_task

#: columns of a prediction table that identify one prediction set among several
GROUP_COLUMNS = ("task", "model")
DEFAULT_PRIMARY = {"classification": "accuracy", "regression": "pearson"}


@dataclass
class Analysis:
    """Macro and micro seed effects of S runs on the same N examples.

    ``per_run``: one row per run, one column per metric. ``macro``: index = metric, columns
    mean, var_published (population std, the paper's VAR), std_sample (divisor S−1), cv,
    min, max, ci_low, ci_high. ``micro``: one row, columns :data:`MICRO_COLUMNS` (CCON is NaN
    without gold labels, prob_con NaN without probabilities; pair std = population std of the
    S(S−1)/2 pairwise values). ``con_matrix`` / ``ccon_matrix`` / ``prob_matrix``: S×S, up to
    ``matrix_runs`` runs; beyond, None, and the pair spreads come from ``pair_sample`` (the sampled
    pairs and their values; the micro row gives each spread's standard error and ``n_pairs_sampled``).
    ``run_agreement``: each run's mean CON (and CCON) with the other runs, exact at any S.
    ``stability``: one row per example (see :mod:`seedscope.metrics.stability`). ``baseline``:
    each metric of a constant majority-class prediction (see
    :func:`seedscope.metrics.macro.majority_baseline`), the level a run must beat.
    ``error_bars``: per run its accuracy, SE over examples and (with clusters) clustered SE;
    ``variance_split``: the seed and example-sampling parts of the accuracy's variance and the
    minimum detectable difference (both None without per-example correctness: regression, no
    labels). ``degenerate``: runs that predict one class only or score at or below the baseline.

    Parameters
    ----------
    aligned : AlignedRuns
        The runs analysed; the other fields are the DataFrames named above.

    Returns
    -------
    Analysis
        Built by :func:`analyze`; :meth:`to_dict` gives every number as JSON-ready values

    Examples
    --------
    >>> import glob, seedscope
    >>> runs = sorted(glob.glob("examples/rte/*.csv"))  # one file per seed, in the repository
    >>> result = seedscope.analyze(seedscope.read_predictions(runs), n_boot=200)
    >>> result.per_run.shape, result.con_matrix.shape
    ((5, 5), (5, 5))
    """

    aligned: AlignedRuns
    primary_metric: str | None
    per_run: pd.DataFrame
    macro: pd.DataFrame
    micro: pd.DataFrame
    con_matrix: pd.DataFrame | None
    ccon_matrix: pd.DataFrame | None
    prob_matrix: pd.DataFrame | None
    stability: pd.DataFrame
    confidence: float
    baseline: pd.Series
    error_bars: pd.DataFrame | None = None
    variance_split: pd.Series | None = None
    degenerate: pd.DataFrame | None = None
    run_agreement: pd.DataFrame | None = None
    pair_sample: pd.DataFrame | None = None

    @property
    def task_type(self) -> PredictionType:
        return self.aligned.task_type

    @property
    def runs(self) -> list[str]:
        return self.aligned.runs

    @property
    def matrix_sampled(self) -> bool:
        """Whether the pair spreads come from a sample of pairs (more runs than the exact matrices were made for)."""
        return self.pair_sample is not None

    def pair_distribution(self) -> pd.DataFrame:
        """Quantiles (min, 5 %, 25 %, median, 75 %, 95 %, max) of the pairwise CON, CCON and π: exact, or of the
        sampled pairs."""
        matrices = {"con": self.con_matrix, "ccon": self.ccon_matrix, "prob_con": self.prob_matrix}
        return pair_distribution(matrices, self.pair_sample)

    def least_agreeing(self, k: int = 10) -> pd.DataFrame:
        """The ``k`` runs whose predictions agree least with the other runs' (lowest mean CON with them)."""
        return self.run_agreement.sort_values(["con", *self.run_agreement.columns[1:]], kind="stable").head(k)

    def most_unstable(self, k: int = 10) -> pd.DataFrame:
        """The ``k`` examples whose predictions vary most across runs."""
        return self._once(("most_unstable", k), lambda: most_unstable(self.stability, k))

    def category_counts(self) -> pd.Series:
        """How many examples fall in each stability category (classification only)."""
        if "category" not in self.stability.columns:
            return pd.Series(dtype="int64", name="count")
        return self._once("categories", lambda: self.stability["category"].value_counts().rename("count"))

    def _once(self, key, make):
        """A copy of what ``make`` gives, made once: each is a pass over every example (the tables and the JSON ask)."""
        found = self.__dict__.setdefault("_found", {})
        return (found[key] if key in found else found.setdefault(key, make())).copy()

    def to_dict(self, top_k: int = 10) -> dict:
        """The documented JSON schema (docs/how-to/analyze.md): fractions, NaN written as null."""
        micro = self.micro.to_dict("records")[0]
        out = {
            "units": "fraction",
            "task_type": self.task_type,
            "primary_metric": self.primary_metric,
            "confidence": self.confidence,
            "runs": list(self.runs),
            "classes": [str(c) for c in self.aligned.classes],
            "metrics": self.macro.to_dict("index"),  # not row by row: 10,000 runs would take seconds
            "baseline": dict(self.baseline),
            "error_bars": None if self.error_bars is None else self.error_bars.to_dict("index"),
            "variance_split": None if self.variance_split is None else dict(self.variance_split),
            "degenerate_runs": {} if self.degenerate is None else dict(self.degenerate["reason"]),
            "micro": {name: micro[name] for name in MICRO_COLUMNS},
            "per_run": self.per_run.to_dict("index"),
            "con_matrix": None if self.con_matrix is None else self.con_matrix.to_numpy().tolist(),
            "ccon_matrix": None if self.ccon_matrix is None else self.ccon_matrix.to_numpy().tolist(),
            "con_matrix_sampled": self.matrix_sampled,
            "pair_distribution": {kind: dict(row) for kind, row in self.pair_distribution().iterrows()},
            "least_agreeing_runs": [{"run": run, **dict(row)} for run, row in self.least_agreeing(top_k).iterrows()],
            "stability_categories": {k: int(v) for k, v in self.category_counts().items()},
            "most_unstable": [
                {"example_id": example_id, **dict(row)}
                for example_id, row in self.most_unstable(top_k).iterrows()
            ],
        }
        return json_ready(out)


# settings first, not a fault of the table read below
@validate_params(power=check_power, matrix_runs=check_matrix_runs, pair_sample=check_pair_sample)
def analyze(
    table_or_aligned: pd.DataFrame | AlignedRuns,
    *,
    task_type: PredictionType | None = None,
    intersect: bool = False,
    primary_metric: str | None = None,
    n_boot: int = 10_000,
    confidence: float = 0.95,
    seed: int = 0,
    power: float = 0.8,
    matrix_runs: int = EXACT_PAIR_RUNS,
    pair_sample: int = PAIR_SAMPLE,
) -> Analysis:
    """Macro and micro seed effects of one prediction set (S ≥ 2 runs of one task and model).

    A ``cluster`` column of the table groups examples for the clustered standard error.

    Parameters
    ----------
    table_or_aligned : pandas.DataFrame or AlignedRuns
        The predictions of S ≥ 2 runs: a long table (:mod:`seedscope.predictions`) or aligned runs.
    task_type : {"classification", "regression"}, optional
        Default: regression when the predictions are non-integer floats.
    intersect : bool, default False
        Keep only the example ids every run covers.
    primary_metric : str, optional
        ζ of the summaries (and of regression CCON); default: accuracy, or Pearson for regression.
    n_boot : int, default 10000
        Bootstrap resamples of the CI of the mean.
    confidence : float, default 0.95
        Confidence level of every interval.
    seed : int, default 0
        Seed of the resampling.
    power : float, default 0.8
        Power of the minimum detectable difference.
    matrix_runs : int, default 300
        Up to this many runs the S×S matrices and the exact spread of the pairwise values are computed; beyond,
        the spread is estimated from ``pair_sample`` pairs drawn with ``seed`` (the means stay exact).
    pair_sample : int, default 20000
        How many pairs the spread is estimated from beyond ``matrix_runs`` runs.

    Returns
    -------
    Analysis
        Macro, micro, per-example stability and error bars as DataFrames.

    Examples
    --------
    >>> import glob, seedscope
    >>> runs = sorted(glob.glob("examples/rte/*.csv"))  # one file per seed, in the repository
    >>> result = seedscope.analyze(seedscope.read_predictions(runs), n_boot=200)
    >>> round(float(result.macro.loc["accuracy", "mean"]), 3), round(float(result.micro["con"].iloc[0]), 3)
    (0.748, 0.759)
    """
    texts = clusters = None
    if isinstance(table_or_aligned, AlignedRuns):
        aligned = table_or_aligned
    else:
        _require_single_group(table_or_aligned)
        aligned = align_runs(table_or_aligned, task_type=task_type, intersect=intersect)
        if TEXT in table_or_aligned.columns:
            texts = _first_per_example(table_or_aligned, TEXT)
        if CLUSTER in table_or_aligned.columns:
            clusters = _first_per_example(table_or_aligned, CLUSTER).reindex(aligned.example_ids).to_numpy()
    micro_metrics.require_pairs(aligned.n_runs)

    per_run = macro_metrics.per_run_scores(aligned)
    if aligned.has_labels:
        primary_metric = primary_metric or DEFAULT_PRIMARY[aligned.task_type]
        if primary_metric not in per_run.columns:
            raise SeedscopeError(
                f"unknown metric {primary_metric!r} for a {aligned.task_type} task; "
                f"choose one of {', '.join(per_run.columns)}"
            )
    else:  # per-example values without labels are summarised by their mean; classes without labels by nothing
        primary_metric = macro_metrics.MEAN_SCORE if macro_metrics.MEAN_SCORE in per_run.columns else None
    summary = macro_metrics.summarize_runs(per_run, n_boot=n_boot, confidence=confidence, seed=seed)
    examples = examples_ahead(aligned)  # on a second core, for many examples, while the rest is made here
    baseline = macro_metrics.majority_baseline(aligned)
    error_bars, split = _error_bars(aligned, clusters, confidence, power)
    agreement, stability = examples.result()
    micro = micro_effects(aligned, per_run, primary_metric, agreement, matrix_runs=matrix_runs,
                          pair_sample=pair_sample, seed=seed)
    if texts is not None:
        stability[TEXT] = texts.reindex(stability.index).to_numpy()
    runs = pd.Index(aligned.runs, name="run")

    def square(matrix):
        return None if matrix is None else pd.DataFrame(matrix, index=runs, columns=runs)

    return Analysis(
        aligned, primary_metric, per_run, summary, micro.row, square(micro.con), square(micro.ccon),
        square(micro.prob), stability, confidence, baseline, error_bars, split,
        degenerate_runs(aligned, per_run, baseline, primary_metric), micro.run_agreement, micro.pair_sample,
    )


def _first_per_example(table: pd.DataFrame, column: str) -> pd.Series:
    """A column's first value per example, indexed by the ids as alignment keeps them (int or text)."""
    return table[column].groupby(normal_ids(table[EXAMPLE_ID])).first()


def _error_bars(aligned: AlignedRuns, clusters, confidence: float, power: float):
    """Per-run accuracy with its SE over examples (and clustered SE), and the variance split; None for regression."""
    if aligned.task_type != "classification" or not aligned.has_labels:
        return None, None
    labelled = aligned.labels >= 0
    if labelled.sum() < 2:
        return None, None
    predictions, labels = aligned.predictions, aligned.labels
    if not labelled.all():  # compress keeps rows contiguous (a [:, mask] copy strides each run's row)
        predictions, labels = np.compress(labelled, predictions, axis=1), labels[labelled]
    correct = predictions == labels  # S × N booleans, not floats
    # a count over N is the exact sum of its 0/1 floats that mean would add up, at a fraction of the cost
    frame = pd.DataFrame({"accuracy": np.count_nonzero(correct, axis=1) / correct.shape[1],
                          "se": standard_error(correct)}, index=pd.Index(aligned.runs, name="run"))
    if clusters is not None:
        frame["se_clustered"] = clustered_standard_error(correct, clusters[labelled])
    split = variance_split(frame["accuracy"], frame.get("se_clustered", frame["se"]))
    # another system with this spread, S independent runs each: sd of one run's difference = √(2·total)
    split["mdd"] = minimum_detectable_difference(np.sqrt(2 * split["total_variance"]), aligned.n_runs,
                                                 confidence=confidence, power=power)
    split["power"] = power
    return frame, split


def degenerate_runs(aligned: AlignedRuns, per_run: pd.DataFrame, baseline: pd.Series, metric: str | None) -> pd.DataFrame:
    """Runs that failed to learn: one predicted class (or a constant value), or ζ at or below the baseline."""
    predictions = aligned.predictions
    constant = np.zeros(aligned.n_runs, dtype=bool)
    for block in micro_metrics.run_blocks(*predictions.shape):
        constant[block] = (predictions[block] == predictions[block, :1]).all(axis=1)
    runs = np.asarray(aligned.runs, dtype=object)
    reason = "predicts one class only" if aligned.task_type == "classification" else "constant prediction"
    reasons = pd.Series(reason, index=runs[constant], dtype=object)
    if metric is not None and metric in baseline.index:  # the runs that learned nothing follow the constant ones
        values = per_run[metric].to_numpy(dtype=float)
        low = ~constant & (values <= baseline[metric])
        reasons = pd.concat([reasons, pd.Series([f"{metric} {value:.4f} at or below the baseline {baseline[metric]:.4f}"
                                                 for value in values[low]], index=runs[low], dtype=object)])
    return pd.DataFrame({"reason": reasons}).rename_axis("run")


def _group_columns(table: pd.DataFrame) -> list[str]:
    return [c for c in GROUP_COLUMNS if c in table.columns]


def _require_single_group(table: pd.DataFrame) -> None:
    for column in _group_columns(table):
        values = table[column].dropna().unique()
        if len(values) > 1:
            raise SeedscopeError(
                f"the predictions hold several {column}s ({', '.join(map(str, values[:5]))}); "
                "analyse them one at a time or with analyze_groups"
            )


def task_defaults(task, options: dict) -> dict:
    """Fill an unset primary metric and task type from the registry (MCC for CoLA …)."""
    spec = find_task(task) if task is not None else None
    if spec is None:
        return options
    options = dict(options)
    if options.get("primary_metric") is None:
        options["primary_metric"] = spec.primary_metric
    if options.get("task_type") is None and spec.task_type in ("classification", "regression"):
        options["task_type"] = spec.task_type
    return options


def analyze_groups(table: pd.DataFrame, **options) -> dict[tuple, Analysis]:
    """:func:`analyze` each (task, model) group of a table; keys are (task, model) tuples.

    A table without ``task`` / ``model`` columns is one group, keyed ``(None, None)``.
    ``options`` are passed to :func:`analyze`; for a task the registry knows, an unset
    ``primary_metric`` / ``task_type`` comes from the registry (MCC for CoLA, Pearson for STS-B),
    and MultiRC answers are clustered by question for the clustered standard error. A task the
    reader found to hold per-example values (``table.attrs["regression_tasks"]``; ``"None"`` for a
    table without a task column) is analysed as regression unless ``task_type`` says otherwise.

    Parameters
    ----------
    table : pandas.DataFrame
        A long prediction table, optionally with ``task`` and ``model`` columns.
    **options
        Those of :func:`analyze`.

    Returns
    -------
    dict
        (task, model) → :class:`Analysis`.

    Examples
    --------
    >>> from seedscope import analyze_groups, read_predictions
    >>> groups = analyze_groups(read_predictions("examples/cb.csv"), n_boot=200)
    >>> list(groups)
    [('cb', None)]
    """
    columns = _group_columns(table)
    regression = set(table.attrs.get("regression_tasks", ()))
    if not columns:
        if "None" in regression and options.get("task_type") is None:
            options = {**options, "task_type": "regression"}
        return {(None, None): analyze(table, **options)}
    results = {}
    for key, group in table.groupby(columns, sort=False, dropna=False):
        key = key if isinstance(key, tuple) else (key,)
        named = dict(zip(columns, key))
        # Columns another group filled (its prob_<class> columns) are empty here: drop them.
        group = group.drop(columns=columns).dropna(axis=1, how="all")
        task = named.get("task")
        if CLUSTER not in group.columns and task is not None and find_task(task) is not None:  # MultiRC: answers of one question
            clusters = example_clusters(task, group[EXAMPLE_ID])
            group = group.assign(**{CLUSTER: clusters}) if clusters is not None else group
        chosen = task_defaults(task, options)
        if str(task) in regression and chosen.get("task_type") is None:
            chosen["task_type"] = "regression"
        try:
            results[(task, named.get("model"))] = analyze(group, **chosen)
        except SeedscopeError as error:  # say which group of a multi-task table is at fault
            where = ", ".join(f"{column} {value}" for column, value in named.items())
            raise SeedscopeError(f"{where}: {error}") from None
    return results
