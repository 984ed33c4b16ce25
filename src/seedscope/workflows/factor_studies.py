"""Running a factor study: ``run_factor_study(config, out=...)``, the study's counterpart of ``sweep()``.

Golden runs first, then mitigation runs in batches until the estimate settles. The store is created with the whole plan (M = the cap), so ``--resume`` finds the same plan.
Runs are executed in plan order — golden runs first, then one mitigation run (every factor,
every investigation seed) after another. With an :class:`AdaptiveSchedule`, after each batch
the importance of every factor still running is recomputed from the store; a factor whose IS,
c and m have settled gets no further mitigation runs. Mitigation runs never scheduled stay
pending and are not part of the study (they are not missing runs).
"""

from __future__ import annotations

import os
import time
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, Callable, Literal, Mapping, Sequence

import pandas as pd

from seedscope.config import SweepConfig, build_config, resolve_model
from seedscope.errors import DegenerateRunWarning, ReadingChoiceWarning, SeedscopeError, UnstableEstimateWarning
from seedscope.executors.base import Progress, Runner
from seedscope.executors.options import ExecutionOptions
from seedscope.factor_study.adaptive import REFERENCE_M, REFERENCE_N, AdaptiveSchedule
from seedscope.factor_study.importance import FactorAnalysis, FactorStudy, analyze_factors, group_stats, importance_from_groups
from seedscope.factor_study.plan import GOLDEN, INVESTIGABLE_FACTORS, MITIGATION, FactorStudyPlan, factor_study_plan
from seedscope.factor_study.scores import study_from_table
from seedscope.io import read_score_table
from seedscope.notes import recorded
from seedscope.plan import RunSpec, model_short_name
from seedscope.plan.implementation import check_axes, combinations
from seedscope.plan.runs import runner_of
from seedscope.store import ExperimentStore
from seedscope.store.views import factor_score_table
from seedscope.workflows.sweeping import execute, execution_of, preflight, refuse_early

#: runs the given specs into the store (an executor bound to its options)
Execute = Callable[[Sequence[RunSpec]], None]


def run_study(
    plan: FactorStudyPlan, store: ExperimentStore, execute: Execute, schedule: AdaptiveSchedule | None = None,
    on_step: Callable[[pd.DataFrame], None] | None = None, metric: str | None = None,
) -> pd.DataFrame:
    """Execute ``plan`` into ``store``; with ``schedule``, stop adding mitigation runs per factor once settled.

    ``metric`` is the run metric the schedule watches (default: the task's primary metric).
    Returns one row per factor: mitigation runs used, runs used and saved against the reference
    N = 10 × M = 100, whether the estimate settled, and (adaptive only) the trace of IS, c and m.
    """
    n = len(plan.investigation_seeds)
    if schedule is None:
        execute(list(plan.specs))
        return _summary({f: plan.n_mitigation for f in plan.factors}, {f: False for f in plan.factors}, n, [])
    execute(plan.golden_specs())
    done = {f: 0 for f in plan.factors}
    settled = {f: False for f in plan.factors}
    active, target, trace = list(plan.factors), min(schedule.start, plan.n_mitigation), []
    while active:
        execute(plan.group_specs(done[active[0]] + 1, target, factors=active))
        table, info = factor_score_table(store, metric)
        upcoming = []
        for factor in list(active):
            done[factor] = target
            rows = table[(table["experiment"] == GOLDEN) | ((table["experiment"] == factor) & (table[MITIGATION] <= target))]
            study = study_from_table(rows, metric=info["metric"])
            stats = group_stats(study.grids[factor].scores, factor=factor, allow_missing=True, allow_small_groups=True)
            mean, std = stats.partial_mean[stats.kept], stats.partial_std[stats.kept]
            golden_std = float(study.golden.std())
            c, m, importance = importance_from_groups(mean, std, golden_std)
            trace.append({"factor": factor, "mitigation_runs": target, "c_std": float(c), "m_std": float(m),
                          "importance": float(importance)})
            following = schedule.next_size(mean, std, golden_std, done=target)  # not len(mean): groups may be lost
            settled[factor] = schedule.settled(mean, std, golden_std)
            if following is None or following > plan.n_mitigation:
                active.remove(factor)
            else:
                upcoming.append(following)
        if on_step:
            on_step(pd.DataFrame(trace))
        target = min(upcoming, default=target)
    for factor in (f for f in plan.factors if not settled[f]):
        warnings.warn(f"{factor}: IS, c and m had not settled within {plan.n_mitigation} mitigation runs (tolerance "
                      f"{schedule.tolerance:g}); read its interval, or raise -M", UnstableEstimateWarning, stacklevel=2)
    return _summary(done, settled, n, trace)


def _summary(done: dict[str, int], settled: dict[str, bool], n: int, trace: list[dict]) -> pd.DataFrame:
    reference = REFERENCE_N * REFERENCE_M
    rows = [{"factor": f, "mitigation_runs": m, "runs_used": n * m, "reference_runs": reference,
             "runs_saved": reference - n * m, "settled": settled[f],
             "trace": [t for t in trace if t["factor"] == f]} for f, m in done.items()]
    return pd.DataFrame(rows).set_index("factor")


@dataclass(frozen=True)
class FactorStudyConfig:
    """What a factor study runs: one task and model, the investigated factors, N × M + L runs.

    ``factors`` may include ``"all"`` (every factor the fine-tuning runner can vary).
    Hyper-parameters come from a shipped ``preset`` and/or a sweep YAML ``config`` with
    ``hparams`` overrides on top, as ``seedscope sweep`` reads them; every run pools the task's
    labelled data, re-splits it (``test_fraction`` held out, stratified) and picks
    ``num_labelled`` class-balanced examples. ``tolerance`` turns on the adaptive run count.
    ``runner`` ``icl`` prompts the model instead (``hparams`` then hold :class:`ICLSettings`), and
    its factors are the sampling of demonstrations and the prompt format; ``runner`` ``meta``
    meta-learns (``method`` protonet, maml or reptile; :class:`MetaSettings`), its factors the
    episodes, the support set, the initialisation and the data.

    Parameters
    ----------
    task, model : str
    factors : list of str
    n_investigation, n_mitigation : int
        N investigation runs in each of M mitigation groups.
    n_golden : int, optional
    **other fields
        Labelled examples, split, preset, config, hparams, runner, method, tolerance, as above.

    Returns
    -------
    FactorStudyConfig

    Examples
    --------
    >>> from seedscope import FactorStudyConfig
    >>> config = FactorStudyConfig(task="sst2", model="bert-tiny", factors=["data_order"], n_investigation=3,
    ...                            n_mitigation=2)
    >>> config.factors, config.n_investigation
    (['data_order'], 3)
    """

    task: str
    model: str
    factors: Sequence[str]
    n_investigation: int = 10
    n_mitigation: int = 100
    n_golden: int | None = None
    num_labelled: int = 1000
    test_fraction: float = 0.2
    method: str = "full"
    preset: str | None = None
    config: str | os.PathLike | None = None
    hparams: Mapping[str, Any] = field(default_factory=dict)
    tolerance: float | None = None
    start: int = 10
    batch: int = 10
    patience: int = 2
    metric: str | None = None
    runner: Literal["finetune", "icl", "meta"] = "finetune"
    #: implementation settings and their values, for the ``implementation`` factor (every combination a configuration)
    implementation: Mapping[str, Sequence[Any]] = field(default_factory=dict)

    @cached_property
    def sweep_config(self) -> SweepConfig:
        """The preset, the YAML config and the study's own settings merged: its hyper-parameters and execution."""
        method = "icl" if self.runner == "icl" else self.method
        if runner_of(method) != self.runner:
            raise SeedscopeError(f"method {method!r} is not a {self.runner} method")
        overrides = {"tasks": [self.task], "models": [self.model], "method": method,
                     "hparams": dict(self.hparams) or None}
        return build_config(self.preset, self.config, overrides)

    @cached_property
    def plan(self) -> FactorStudyPlan:
        """The study's runs (seeds drawn as the reference does, without replacement); built once."""
        factors = [f for name in self.factors for f in (INVESTIGABLE_FACTORS[self.runner] if name == "all" else [name])]
        method = self.sweep_config.method
        hparams = {**self.sweep_config.hparams_for(self.task),
                   "resplit": True, "test_fraction": self.test_fraction, "num_labelled": self.num_labelled}
        golden = self.n_golden if self.n_golden is not None else self.n_investigation * self.n_mitigation
        return factor_study_plan(self.task, resolve_model(self.model), factors, self.n_investigation,
                                 self.n_mitigation, golden, method, hparams,
                                 model_name=model_short_name(self.model), runner=self.runner,
                                 implementations=combinations(check_axes(self.implementation, method)))

    def execution_with(self, execution: ExecutionOptions) -> ExecutionOptions:
        """``execution`` with the config file's ``execution: fused`` applied, ``fuse: K`` runs at a time (a study's
        runs are no seed list, so K is not guessed); a combination that cannot run is refused as the options refuse
        it."""
        if self.sweep_config.execution == "fused" and execution.fuse == 1 and self.sweep_config.fuse is None:
            raise SeedscopeError("execution: fused in a factor study's config needs fuse: K (the runs per fused group) "
                                 "beside it")
        return execution_of(self.sweep_config, execution)

    def schedule(self) -> AdaptiveSchedule | None:
        """The adaptive run count, or None for the full N × M plan."""
        if self.tolerance is None:
            return None
        return AdaptiveSchedule(tolerance=self.tolerance, start=min(self.start, self.n_mitigation), batch=self.batch,
                                cap=self.n_mitigation, patience=self.patience)


@dataclass
class FactorStudyRun:
    """A finished :func:`run_factor_study`: its store, runs used per factor and wall time."""

    store: ExperimentStore
    runs_used: pd.DataFrame
    wall_seconds: float
    metric: str | None = None

    @cached_property
    def study(self) -> tuple[FactorStudy, list[str]]:
        """The stored runs as a study, and notes to show (read once)."""
        return load_study(self.store.path, metric=self.metric)

    def analyze(self, **options) -> tuple[FactorAnalysis, list[str]]:
        """The importance analysis of the stored runs (missing runs and small groups allowed) and notes."""
        study, notes = self.study
        options = {"allow_missing": True, "allow_small_groups": True, **options}
        return analyze_factors(study, **options), notes


def run_factor_study(
    config: FactorStudyConfig,
    *,
    out: str | os.PathLike,
    resume: bool = False,
    execution: ExecutionOptions | None = None,
    data_dir: str | os.PathLike | None = None,
    progress: Progress | None = None,
    runner: Runner | None = None,
    **deprecated: Any,
) -> FactorStudyRun:
    """Run the study's investigation × mitigation plan plus the shared golden runs into ``out``.

    Everything that can be wrong (execution options, data, model, plan) is checked before the
    experiment directory is created; ``resume`` continues a directory holding the same plan;
    ``execution`` says where and how the runs are executed (default: one after another here).
    The loose keywords of older releases (``executor=``, ``fail_fast=`` …) still work, with a
    DeprecationWarning.

    Parameters
    ----------
    config : FactorStudyConfig
    out : path
        The experiment directory.
    resume : bool, default False
    execution : ExecutionOptions, optional
        Executor (local or Ray), parallel runs, retries, GPUs, fail-fast.
    data_dir : path, optional
    progress, runner : optional
        A progress display; a runner in place of the spec's own (tests, custom runs).

    Returns
    -------
    FactorStudyRun
        The store, the runs used per factor and the wall time.

    Examples
    --------
    >>> from seedscope import FactorStudyConfig, run_factor_study
    >>> config = FactorStudyConfig(task="sst2", model="bert-tiny", factors=["data_order"])
    >>> store = run_factor_study(config, out="study-out")  # trains N × M + L models  # doctest: +SKIP
    """
    execution = config.execution_with(ExecutionOptions.from_keywords(execution, deprecated, "run_factor_study"))
    refuse_early(execution)  # an executor that cannot run is refused before anything is written
    if resume:
        ExperimentStore.check_resumable(out)
    plan = config.plan
    schedule = config.schedule()
    preflight(list(plan.specs), data_dir, execution)
    store = ExperimentStore.create(out, plan.to_dict(), resume=resume)

    def run_specs(specs: Sequence[RunSpec]) -> None:
        execute(list(specs), store, execution, data_dir=data_dir, progress=progress, runner=runner)

    started = time.perf_counter()
    used = run_study(plan, store, run_specs, schedule, metric=config.metric)
    return FactorStudyRun(store, used, time.perf_counter() - started, config.metric)


def load_study(source: str | os.PathLike, *, metric: str | None = None, chance: float | None = None,
               fmt: str | None = None, bounds: tuple[float, float] | None = None) -> tuple[FactorStudy, list[str]]:
    """A factor study from a long score table file (``fmt``: csv, tsv, jsonl or parquet when its
    suffix does not tell; ``bounds``: the range of its scores, see :func:`study_from_table`) or a ``factors run``
    experiment directory, and notes to show (the texts of the :class:`~seedscope.errors.SeedscopeWarning` s raised)."""
    with recorded() as notes:
        if ExperimentStore.is_store(source):
            table, info = factor_score_table(ExperimentStore.open(source), metric)
            warnings.warn(f"{info['task']} / {info['model']}: score = {info['metric']} (fractions)",
                          ReadingChoiceWarning, stacklevel=2)
            if info["not_done"]:
                counts = ", ".join(f"{n} {status}" for status, n in info["not_done"].items())
                warnings.warn(f"study runs not done ({counts}): inside an analysed group they are missing runs",
                              DegenerateRunWarning, stacklevel=2)
            chance = info["chance"] if chance is None else chance
            study = study_from_table(table, metric=info["metric"], chance=chance)
        else:
            study = study_from_table(read_score_table(Path(source), fmt=fmt), metric=metric or "score", chance=chance,
                                     bounds=bounds)
    return study, notes
