"""Is any seed universally better? The seed × task matrix and a Friedman test across seeds.

The paper (its Figure 3) answers the question by eye from a heatmap of the normalised primary
metric; the report adds the Friedman test: each task is a block, each seed a treatment, and
the test asks whether the seeds' ranks within tasks differ more than chance allows. It needs
at least three seeds (scipy) and at least three tasks (fewer blocks give it no power), and
runs on complete blocks only (see :func:`complete_block`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

#: the smallest number of seeds (treatments) and of tasks (blocks) the test is run on
MIN_SEEDS, MIN_TASKS = 3, 3
ALPHA = 0.05


@dataclass(frozen=True)
class SeedTest:
    """Result of the Friedman test across seeds; ``statistic``/``p_value`` are NaN when not run."""

    statistic: float
    p_value: float
    n_seeds: int
    n_tasks: int
    message: str


def seed_task_scores(primary: dict[str, pd.Series]) -> pd.DataFrame:
    """Rows = seeds (run names), columns = tasks; ``primary[task]`` is that task's per-run ζ.

    Seeds are matched across tasks by run name; a seed missing in a task is NaN.
    """
    frame = pd.DataFrame({task: values.astype(float) for task, values in primary.items()})
    frame.index.name = "seed"
    return frame


def normalise_per_task(scores: pd.DataFrame) -> pd.DataFrame:
    """Min–max scale each task's column to [0, 1] (1 = the task's best seed; ½ when all tie)."""
    low, high = scores.min(), scores.max()
    span = (high - low).where(high > low)
    return ((scores - low) / span).where(scores.isna() | span.notna(), 0.5)


def complete_block(scores: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The complete seeds × tasks block the test runs on, and the tasks left out of it.

    Candidates are each task's set of runs and the runs every task has; a candidate keeps the
    tasks that have all of its runs. The block chosen is the largest (seeds × tasks) one that
    the test can run on, so that a task whose runs are named differently is left out rather
    than emptying the block.
    """
    runs = {task: frozenset(scores.index[scores[task].notna()]) for task in scores.columns}
    if not runs:
        return scores, []
    candidates = set(runs.values()) | {frozenset.intersection(*runs.values())}

    def size(seeds: frozenset) -> tuple:
        n_tasks = sum(seeds <= names for names in runs.values())
        return (len(seeds) >= MIN_SEEDS and n_tasks >= MIN_TASKS, len(seeds) * n_tasks, n_tasks, sorted(seeds))

    best = max(candidates, key=size)
    kept = [task for task, names in runs.items() if best <= names]
    rows = [seed for seed in scores.index if seed in best]
    return scores.loc[rows, kept], [task for task in scores.columns if task not in kept]


def friedman_across_seeds(scores: pd.DataFrame) -> SeedTest:
    """Friedman χ² test of "the seeds rank the same on average across tasks" (see :func:`complete_block`)."""
    complete, left_out = complete_block(scores)
    n_seeds, n_tasks = complete.shape
    note = f" ({len(left_out)} task(s) left out for lacking those seeds: {', '.join(map(str, left_out))})" if left_out else ""
    if n_seeds < MIN_SEEDS or n_tasks < MIN_TASKS:
        lacking = []
        if n_seeds < MIN_SEEDS:
            lacking.append(f"{MIN_SEEDS} seeds present in every task ({n_seeds} here)")
        if n_tasks < MIN_TASKS:
            lacking.append(f"{MIN_TASKS} tasks as blocks ({n_tasks} here)")
        return SeedTest(np.nan, np.nan, n_seeds, n_tasks,
                        "Friedman test not run: it needs at least " + " and ".join(lacking) + f"{note}.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # all-tied blocks: scipy warns and returns NaN
        result = stats.friedmanchisquare(*complete.to_numpy(dtype=float))
    statistic, p_value = float(result.statistic), float(result.pvalue)
    where = f"across {n_seeds} seeds over {n_tasks} tasks{note}"
    if np.isnan(p_value):
        return SeedTest(statistic, p_value, n_seeds, n_tasks,
                        f"Friedman test {where}: undefined (every task ranks all seeds equal).")
    verdict = (
        "the seeds' ranks differ consistently across tasks — some seed does better overall"
        if p_value < ALPHA
        else "no evidence that any seed is universally better"
    )
    return SeedTest(statistic, p_value, n_seeds, n_tasks,
                    f"Friedman test {where}: χ² = {statistic:.2f}, p = {p_value:.3g} — {verdict}.")
