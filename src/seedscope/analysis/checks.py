"""The input checks of the seed-level statistics: per-run scores, finite and long enough (and said unreliable below
:data:`FEW_RUNS`); systems compared as runs of one task on the same examples."""

from __future__ import annotations

import warnings
from typing import Mapping

import numpy as np

from seedscope.errors import SeedscopeError, UnstableEstimateWarning
from seedscope.predictions import AlignedRuns

#: below this many runs (seeds) an interval, a test or a seeds-needed curve of them is unreliable, and is said to be
FEW_RUNS = 3


def check_scores(values, what: str, minimum: int = 1) -> np.ndarray:
    """``values`` as a flat float array; fewer than ``minimum`` values or a NaN / inf is one clear error."""
    array = np.asarray(values, dtype=float).ravel()
    if len(array) < minimum:
        raise SeedscopeError(f"{what} needs at least {minimum} value(s), got {len(array)}")
    if not np.isfinite(array).all():
        raise SeedscopeError(f"{what} contains a NaN or infinite value")
    return array


def warn_few_runs(name: str, n_runs: int, what: str) -> None:
    """Say (an :class:`~seedscope.errors.UnstableEstimateWarning`) that ``what`` of ``name`` rests on fewer than
    :data:`FEW_RUNS` runs: nothing drawn from so few is extrapolated in silence."""
    if n_runs < FEW_RUNS:
        warnings.warn(f"{name} has {n_runs} run{'s' if n_runs != 1 else ''}: {what} rest on too few runs to trust "
                      f"(unreliable; they need {FEW_RUNS} runs at least)", UnstableEstimateWarning, stacklevel=3)


def check_one_task(systems: Mapping[str, tuple[AlignedRuns, str | None]]) -> None:
    """Refuse, in one line naming both, to compare systems that are not runs of one task on the same examples: their
    tasks differ, they share no example id, or their gold labels differ on the ids they share (RTE set against CB:
    both number their examples from 0). ``systems``: name → (its aligned runs, its task when known)."""
    (first, (reference, reference_task)), *others = systems.items()
    for name, (aligned, task) in others:
        pair = f"{first} and {name} are not runs of one task"
        if reference_task is not None and task is not None and str(reference_task) != str(task):
            raise SeedscopeError(f"{pair}: their tasks differ ({reference_task}, {task}); compare runs of one task")
        ids_a, ids_b = reference.example_ids, aligned.example_ids
        if ids_a.dtype != ids_b.dtype:  # int ids beside text ids: 7 is "7"
            ids_a, ids_b = ids_a.astype(str), ids_b.astype(str)
        shared, at_a, at_b = np.intersect1d(ids_a, ids_b, assume_unique=True, return_indices=True)
        if not len(shared):
            raise SeedscopeError(f"{pair} on the same examples: they share no example id; compare runs on one "
                                 "evaluation set")
        if not (reference.has_labels and aligned.has_labels) or reference.task_type != aligned.task_type:
            continue
        gold_a, gold_b = _gold(reference)[at_a], _gold(aligned)[at_b]
        same = np.isclose(gold_a.astype(float), gold_b.astype(float), equal_nan=True) if (
            reference.task_type == "regression") else gold_a == gold_b
        if not same.all():
            sets = "" if set(gold_a) == set(gold_b) else (
                f" ({first}: {', '.join(sorted(map(str, set(gold_a))))}; {name}: "
                f"{', '.join(sorted(map(str, set(gold_b))))})")
            raise SeedscopeError(f"{pair}: their gold labels differ on {int((~same).sum()):,} of the {len(shared):,} "
                                 f"example ids they share{sets}; compare runs of one task on the same examples")


def _gold(aligned: AlignedRuns) -> np.ndarray:
    """Each example's gold label: its class name (None where missing), or the regression target."""
    if aligned.task_type == "regression":
        return np.asarray(aligned.labels, dtype=float)
    names = np.asarray([str(c) for c in aligned.classes] + [None], dtype=object)
    return names[np.where(aligned.labels >= 0, aligned.labels, len(aligned.classes))]
