"""Running a factor study: golden runs, then mitigation runs in batches until the estimate settles.

The store is created with the whole plan (M = the cap), so ``--resume`` finds the same plan.
Runs are executed in plan order — golden runs first, then one mitigation run (every factor,
every investigation seed) after another. With an :class:`AdaptiveSchedule`, after each batch
the importance of every factor still running is recomputed from the store; a factor whose IS,
c and m have settled gets no further mitigation runs. Mitigation runs never scheduled stay
pending and are not part of the study (they are not missing runs).
"""

from __future__ import annotations

from typing import Callable, Sequence

import pandas as pd

from seedscope.analysis.factor_adaptive import REFERENCE_M, REFERENCE_N, AdaptiveSchedule
from seedscope.analysis.factor_table import MITIGATION, score_table_from_store, study_from_table
from seedscope.analysis.factors import group_stats, importance_from_groups
from seedscope.plan import GOLDEN, FactorStudyPlan, RunSpec
from seedscope.store import ExperimentStore

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
        table, info = score_table_from_store(store, metric)
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
    return _summary(done, settled, n, trace)


def _summary(done: dict[str, int], settled: dict[str, bool], n: int, trace: list[dict]) -> pd.DataFrame:
    reference = REFERENCE_N * REFERENCE_M
    rows = [{"factor": f, "mitigation_runs": m, "runs_used": n * m, "reference_runs": reference,
             "runs_saved": reference - n * m, "settled": settled[f],
             "trace": [t for t in trace if t["factor"] == f]} for f, m in done.items()]
    return pd.DataFrame(rows).set_index("factor")
