"""Seed-level comparison of systems: is A better than B, given S seeds of each?

Each statistic is its own module (:mod:`.aggregates`, :mod:`.aso`, :mod:`.significance`,
:mod:`.differences`, :mod:`.planning`), checked against the public tools in
``../shared/reference/stat-checks.md`` without their known defects; this module runs them all
for every pair of systems.
"""

from __future__ import annotations

import itertools
import warnings
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np
import pandas as pd

from seedscope.analysis.aggregates import interquartile_mean_ci, probability_of_improvement
from seedscope.analysis.aso import RELIABLE_RUNS, aso
from seedscope.analysis.checks import check_one_task, check_scores, warn_few_runs
from seedscope.analysis.seed_effects import DEFAULT_PRIMARY, task_defaults
from seedscope.analysis.differences import joint_bootstrap, mean_difference_ci
from seedscope.analysis.planning import expected_max_performance, seeds_needed
from seedscope.analysis.error_bars import bounded_t_interval, minimum_detectable_difference
from seedscope.analysis.significance import (
    adjust_p_values,
    holm,
    mcnemar_runs,
    paired_permutation_test,
    wilcoxon_signed_rank,
)
from seedscope.errors import DegenerateRunWarning, SeedscopeError
from seedscope.metrics.macro import bounds_of, per_run_scores
from seedscope.notes import noted
from seedscope.metrics.resampling import bootstrap_mean_ci
from seedscope.validation import check_confidence, check_power, check_resamples, validate_params
from seedscope.predictions import AlignedRuns, align_runs
from seedscope.serialize import json_ready


@dataclass
class Comparison:
    """Seed-level comparison of several systems on one metric.

    ``systems``: per system n_runs, mean, std (sample), median, min, max, a bootstrap and a
    Student-t CI of the mean, and the IQM with its stratified-bootstrap CI. ``pairs``: per ordered pair (A, B) with A listed first: mean difference
    A − B with its bootstrap CI over seeds (paired when the run names match), P(A > B), ASO
    ε_min both ways, the paired permutation and Wilcoxon signed-rank p-values on matched seeds,
    the minimum detectable difference (paired: from the per-seed differences; unpaired: from
    both systems' variances) and, when per-example
    scores exist, the joint seed × example bootstrap; p-values also Holm- and
    Bonferroni-adjusted over the pairs. ``mcnemar``: per pair and matched seed. ``expected_max``:
    expected best score of n runs per system. ``seeds_needed``: CI widths of mean and VAR by S.
    ``notes``: the texts of the :class:`~seedscope.errors.SeedscopeWarning` s raised while comparing.

    Parameters
    ----------
    metric : str
        The metric compared; the other fields are the DataFrames named above, plus the per-system
        ``series``, the ``settings`` used and ``notes``.

    Returns
    -------
    Comparison
        Built by :func:`compare_systems` or :func:`compare_sweeps`; :meth:`to_dict` for JSON.

    Examples
    --------
    >>> from seedscope import compare_systems
    >>> import pandas as pd
    >>> a = pd.Series([0.80, 0.82, 0.85, 0.79, 0.84], index=list("12345"))  # run → score
    >>> b = pd.Series([0.78, 0.83, 0.80, 0.77, 0.81], index=list("12345"))  # the same seeds
    >>> comparison = compare_systems({"A": a, "B": b}, n_boot=200, n_permutations=199)
    >>> comparison.systems["n_runs"].tolist(), bool(comparison.pairs["paired"].iloc[0])
    ([5, 5], True)
    """

    metric: str
    systems: pd.DataFrame
    pairs: pd.DataFrame
    mcnemar: pd.DataFrame
    expected_max: pd.DataFrame
    seeds_needed: pd.DataFrame
    per_run: dict[str, pd.Series]
    settings: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document of ``seedscope compare`` (schema in docs/how-to/subsets.md)."""
        systems = {}
        for name, row in self.systems.iterrows():
            entry = {key: json_ready(value) for key, value in row.items()}
            entry["scores"] = {str(run): json_ready(v) for run, v in self.per_run[name].items()}
            entry["expected_max"] = [json_ready(v) for v in self.expected_max[name].dropna()]
            needed = self.seeds_needed[self.seeds_needed["system"] == name].drop(columns="system")
            entry["seeds_needed"] = [{k: json_ready(v) for k, v in r.items()} for r in needed.to_dict(orient="records")]
            systems[name] = entry
        pairs = []
        for (a, b), row in self.pairs.iterrows():
            entry = {"system_a": a, "system_b": b, **{key: json_ready(value) for key, value in row.items()}}
            tests = self.mcnemar[(self.mcnemar["system_a"] == a) & (self.mcnemar["system_b"] == b)]
            entry["mcnemar"] = [{k: json_ready(v) for k, v in r.items() if k not in ("system_a", "system_b")} for r in tests.to_dict(orient="records")]
            pairs.append(entry)
        return {
            "metric": self.metric,
            "systems": systems,
            "pairs": pairs,
            "settings": {k: json_ready(v) for k, v in self.settings.items()},
            "notes": list(self.notes),
        }


@noted
def compare_systems(
    per_run: Mapping[str, pd.Series],
    per_example: Mapping[str, pd.DataFrame] | None = None,
    *,
    metric: str = "score",
    n_boot: int = 10_000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
    aso_threshold: float = 0.5,
    paired: bool | None = None,
    power: float = 0.8,
) -> Comparison:
    """Compare systems seed by seed.

    ``per_run``: system → per-run metric values (index = run name; equal names across systems
    are matched seeds). ``per_example``: optional system → runs × examples scores (e.g. 0/1
    correctness, columns = example ids) for the joint bootstrap and McNemar. Every resampling
    uses ``seed``. ``paired=False`` never pairs runs (their names are row numbers, not seeds);
    ``power`` is that of each pair's minimum detectable difference.

    Parameters
    ----------
    per_run : mapping
        System → per-run values (a Series indexed by run name).
    per_example : mapping, optional
        System → runs × examples scores.
    metric : str, default "score"
        The metric's name, for the tables.
    n_boot, n_permutations : int
        Bootstrap resamples and permutations.
    confidence : float, default 0.95
    seed : int, default 0
    aso_threshold : float, default 0.5
        ε_min below which ASO calls one system better.
    paired : bool, optional
        False never pairs runs.
    power : float, default 0.8

    Returns
    -------
    Comparison

    Examples
    --------
    >>> from seedscope import compare_systems
    >>> import pandas as pd
    >>> a = pd.Series([0.80, 0.82, 0.85, 0.79, 0.84], index=list("12345"))  # run → score
    >>> b = pd.Series([0.78, 0.83, 0.80, 0.77, 0.81], index=list("12345"))  # the same seeds
    >>> comparison = compare_systems({"A": a, "B": b}, n_boot=200, n_permutations=199)
    >>> comparison.pairs.index.tolist(), round(float(comparison.pairs["delta"].iloc[0]), 3)
    ([('A', 'B')], 0.022)
    """
    names = list(per_run)
    if len(names) < 2:
        raise SeedscopeError(f"a comparison needs at least two systems, got {len(names)}")
    series = {}
    for name in names:
        values = pd.Series(per_run[name], dtype=float)
        values.index = values.index.astype(str)
        check_scores(values, f"system {name}", 2)
        series[name] = values
    alpha = check_confidence(confidence)
    check_resamples(n_boot)
    check_resamples(n_permutations)
    check_power(power)
    system_rows = []
    for name in names:
        values = series[name].to_numpy()
        low, high = bootstrap_mean_ci(values, n_boot=n_boot, confidence=confidence, seed=seed)
        iqm, iqm_low, iqm_high = interquartile_mean_ci(values, n_boot=n_boot, confidence=confidence, seed=seed)
        t_low, t_high, t_moved = bounded_t_interval(values, confidence, bounds_of(metric, values), f"{name}: {metric}")
        warn_few_runs(name, len(values), "its intervals, the tests of its pairs and its seeds-needed curve")
        system_rows.append(
            {
                "n_runs": len(values),
                "mean": values.mean(),
                "std": values.std(ddof=1),
                "median": float(np.median(values)),
                "min": values.min(),
                "max": values.max(),
                "ci_low": float(low[0]),
                "ci_high": float(high[0]),
                "t_low": float(t_low),
                "t_high": float(t_high),
                "t_clipped": bool(t_moved),
                "iqm": iqm,
                "iqm_ci_low": iqm_low,
                "iqm_ci_high": iqm_high,
            }
        )
    systems = pd.DataFrame(system_rows, index=pd.Index(names, name="system"))

    pairs = list(itertools.combinations(names, 2))
    pair_rows, mcnemar_rows = [], []
    for a, b in pairs:
        runs_b = set(series[b].index)  # once, not once per run: 10,000 runs would take minutes
        matched = [run for run in series[a].index if run in runs_b] if paired is not False else []
        is_paired = len(matched) == len(series[a]) == len(series[b])
        values_a = series[a].loc[matched].to_numpy() if is_paired else series[a].to_numpy()
        values_b = series[b].loc[matched].to_numpy() if is_paired else series[b].to_numpy()
        row = {"n_matched": len(matched), "paired": is_paired}
        row.update(mean_difference_ci(values_a, values_b, paired=is_paired, n_boot=n_boot, confidence=confidence, seed=seed))
        row["prob_improvement"] = probability_of_improvement(series[a].to_numpy(), series[b].to_numpy())
        forward = aso(series[a], series[b], confidence=confidence, n_comparisons=len(pairs), n_boot=n_boot, seed=seed)
        backward = aso(series[b], series[a], confidence=confidence, n_comparisons=len(pairs), n_boot=n_boot, seed=seed)
        row.update(
            violation_ratio=forward.violation_ratio,
            aso_eps_min=forward.eps_min,
            aso_eps_min_reverse=backward.eps_min,
            aso_verdict=_aso_verdict(forward.eps_min, backward.eps_min, aso_threshold, a, b,
                                     min(len(series[a]), len(series[b]))),
        )
        if len(matched) >= 2:
            matched_a, matched_b = series[a].loc[matched], series[b].loc[matched]
            row["p_permutation"] = paired_permutation_test(matched_a, matched_b, n_resamples=n_permutations, seed=seed)
            row["p_wilcoxon"] = wilcoxon_signed_rank(matched_a, matched_b)["p_value"]
            spread, count = float(np.std(matched_a.to_numpy() - matched_b.to_numpy(), ddof=1)), len(matched)
        else:
            row["p_permutation"] = row["p_wilcoxon"] = np.nan
            warnings.warn(f"{a} vs {b}: fewer than 2 matched seeds (same run/seed names), so no paired permutation "
                          "or Wilcoxon test", DegenerateRunWarning, stacklevel=3)
            spread = float(np.sqrt(series[a].var(ddof=1) + series[b].var(ddof=1)))
            count = min(len(series[a]), len(series[b]))
        row["mdd"] = minimum_detectable_difference(spread, count, confidence=confidence, power=power)
        row.update(_joint(per_example, a, b, matched, is_paired, n_boot, confidence, seed))
        if per_example is not None and a in per_example and b in per_example:
            mcnemar_rows += _mcnemar_rows(per_example[a], per_example[b], matched, a, b)
        pair_rows.append({"system_a": a, "system_b": b, **row})
    pair_frame = pd.DataFrame(pair_rows).set_index(["system_a", "system_b"])
    for column in ("p_permutation", "p_wilcoxon", "p_joint"):
        if column in pair_frame:
            present = pair_frame[column].notna()
            for method in ("holm", "bonferroni"):
                adjusted = np.full(len(pair_frame), np.nan)
                adjusted[present.to_numpy()] = adjust_p_values(pair_frame.loc[present, column], method)
                pair_frame[f"{column}_{method}"] = adjusted
    mcnemar_frame = pd.DataFrame(
        mcnemar_rows, columns=["system_a", "system_b", "run", "b", "c", "statistic", "p_value", "method"]
    )
    if len(mcnemar_frame):
        mcnemar_frame["p_holm"] = mcnemar_frame.groupby(["system_a", "system_b"])["p_value"].transform(holm)
    expected = pd.concat(
        {name: expected_max_performance(series[name])["expected_max"] for name in names}, axis=1
    )
    needed = pd.concat(
        [seeds_needed(series[name], n_boot=n_boot, confidence=confidence, seed=seed).reset_index().assign(system=name)
         for name in names],
        ignore_index=True,
    )
    needed = needed[["system"] + [c for c in needed.columns if c != "system"]]
    settings = {"n_boot": n_boot, "n_permutations": n_permutations, "confidence": confidence, "seed": seed,
                "aso_threshold": aso_threshold, "alpha": 2 * alpha, "power": power}
    return Comparison(metric, systems, pair_frame, mcnemar_frame, expected, needed, series, settings)


def _aso_verdict(forward: float, backward: float, threshold: float, a: str, b: str, n_runs: int) -> str:
    if n_runs < RELIABLE_RUNS:
        return f"too few runs for an ASO verdict (fewer than {RELIABLE_RUNS} per system)"
    if forward < threshold:
        return f"{a} almost stochastically dominates {b}"
    if backward < threshold:
        return f"{b} almost stochastically dominates {a}"
    return "no almost stochastic order"


def _joint(per_example, a, b, matched, paired, n_boot, confidence, seed) -> dict[str, float]:
    empty = {"joint_delta": np.nan, "joint_ci_low": np.nan, "joint_ci_high": np.nan, "p_joint": np.nan}
    if per_example is None or a not in per_example or b not in per_example:
        return empty
    frame_a, frame_b = per_example[a], per_example[b]
    if not frame_a.columns.equals(frame_b.columns):
        warnings.warn(f"{a} vs {b}: evaluated on different example ids, so no joint bootstrap or McNemar test",
                      DegenerateRunWarning, stacklevel=4)
        return empty
    if paired:
        frame_a, frame_b = frame_a.loc[matched], frame_b.loc[matched]
    result = joint_bootstrap(
        frame_a.to_numpy(dtype=float), frame_b.to_numpy(dtype=float), paired_seeds=paired,
        n_boot=n_boot, confidence=confidence, seed=seed,
    )
    return {"joint_delta": result.delta, "joint_ci_low": result.ci_delta[0], "joint_ci_high": result.ci_delta[1],
            "p_joint": result.p_value}


def _mcnemar_rows(frame_a: pd.DataFrame, frame_b: pd.DataFrame, matched: list[str], a: str, b: str) -> list[dict]:
    if not frame_a.columns.equals(frame_b.columns):
        return []
    runs = [run for run in matched if run in frame_a.index and run in frame_b.index]
    tests = mcnemar_runs(frame_a.loc[runs].to_numpy() > 0, frame_b.loc[runs].to_numpy() > 0)
    return [{"system_a": a, "system_b": b, "run": run, **test} for run, test in zip(runs, tests)]


@noted
@validate_params(confidence=check_confidence, n_boot=check_resamples, n_permutations=check_resamples, power=check_power)
def compare_sweeps(
    tables: Mapping[str, pd.DataFrame | AlignedRuns],
    *,
    metric: str | None = None,
    n_boot: int = 10_000,
    n_permutations: int = 9999,
    confidence: float = 0.95,
    seed: int = 0,
    power: float = 0.8,
) -> Comparison:
    """Compare sweeps given as prediction tables or aligned runs (system name → its S runs).

    Per-run metrics are those of :func:`seedscope.analyze` (``metric`` defaults to the task's
    primary metric — MCC for CoLA, Pearson for STS-B — or accuracy / Pearson for a table that
    names no registry task); classification with gold labels also gives per-example correctness
    for the joint bootstrap and McNemar.

    Parameters
    ----------
    tables : mapping
        System name → its prediction table or aligned runs.
    metric : str, optional
        Default: the task's primary metric.
    n_boot, n_permutations, confidence, seed, power
        As for :func:`compare_systems`.

    Returns
    -------
    Comparison

    Examples
    --------
    >>> from seedscope import compare_sweeps, read_predictions
    >>> from glob import glob
    >>> runs = sorted(glob("examples/rte/*.csv"))  # one file per seed, in the repository
    >>> table = read_predictions(runs)
    >>> first = table["run"].isin(["seed_42", "seed_52", "seed_62"])
    >>> comparison = compare_sweeps({"A": table[first], "B": table[~first]}, n_boot=200, n_permutations=199)
    >>> comparison.metric, comparison.pairs.index.tolist()
    ('accuracy', [('A', 'B')])
    """
    per_run, per_example, systems = {}, {}, {}
    chosen = metric
    for name, table in tables.items():
        if isinstance(table, AlignedRuns):
            aligned, defaults, task = table, {}, None
        else:
            tasks = table["task"].dropna().unique() if "task" in table.columns else []
            task = tasks[0] if len(tasks) == 1 else None
            defaults = task_defaults(task, {})  # MCC for CoLA, Pearson for STS-B
            aligned = align_runs(table, task_type=defaults.get("task_type"), source=f"sweep {name}")  # names it
        systems[name] = aligned, task
        try:
            scores = per_run_scores(aligned)
        except SeedscopeError as error:
            raise SeedscopeError(f"sweep {name}: {error}") from None
        if scores.shape[1] == 0:
            raise SeedscopeError(f"sweep {name} has no gold labels, so it has no per-run metric to compare")
        chosen = chosen or defaults.get("primary_metric") or DEFAULT_PRIMARY[aligned.task_type]
        if chosen not in scores.columns:
            raise SeedscopeError(f"unknown metric {chosen!r} for sweep {name}; choose one of {', '.join(scores.columns)}")
        undefined = scores.index[scores[chosen].isna()]
        if len(undefined):
            raise SeedscopeError(
                f"sweep {name}: {chosen} is undefined for run(s) {', '.join(map(str, undefined[:5]))} "
                "(e.g. constant predictions have no correlation); pick another --metric or drop those runs"
            )
        per_run[name] = scores[chosen]
        if aligned.task_type == "classification" and aligned.has_labels and (aligned.labels >= 0).all():
            correct = aligned.predictions == aligned.labels[None, :]  # bool: 1 byte an entry, 8× less than float
            per_example[name] = pd.DataFrame(correct, index=aligned.runs, columns=aligned.example_ids)
    check_one_task(systems)
    if len({frame.columns.dtype for frame in per_example.values()}) > 1:  # int ids beside text ids: 7 is "7"
        per_example = {name: frame.set_axis(frame.columns.astype(str), axis=1) for name, frame in per_example.items()}
    if len(per_example) < len(per_run) and per_example:
        warnings.warn("some sweeps lack per-example correctness (regression or missing labels): no joint bootstrap / "
                      "McNemar for them", DegenerateRunWarning, stacklevel=3)
    return compare_systems(
        per_run,
        per_example or None,
        metric=chosen,
        n_boot=n_boot,
        n_permutations=n_permutations,
        confidence=confidence,
        seed=seed,
        power=power,
    )
