"""Experiment stores read for a seed-effect analysis (``analyze``, ``report``): which of their groups to analyse.

A seed effect compares two runs or more of one (task, model) group. A sweep's store may hold
a group with a single finished run (the others failed or are pending); a factor study's store
holds nothing else, since each of its configurations is run once. The groups of two runs or
more are analysed and the others named in a note; when no group is left, a factor study is
pointed to ``seedscope factors analyze``, which is its analysis. Where something else is shown of
the same runs (an implementation study compares one seed's runs), no group left is a note too.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Sequence

import pandas as pd

from seedscope.errors import DegenerateRunWarning, SeedscopeError
from seedscope.notes import recorded
from seedscope.store import ExperimentStore
from seedscope.store.views import has_factor_study

#: the columns of a store's prediction table that name a group and its runs
GROUP = ["task", "model"]
#: how many single-run groups a note names before it counts the rest
NAMED = 5


def analysable_groups(table: pd.DataFrame, paths: Sequence[Path], *,
                      required: bool = True) -> tuple[pd.DataFrame, list[str]]:
    """``table`` without its single-run groups when every input is an experiment store (or, without ``required``,
    any table of task and model groups), and a note naming them (a :class:`~seedscope.errors.DegenerateRunWarning`).

    Other inputs are returned as they are (the analysis says itself that one run is not enough).
    When every group holds one run, ``required`` raises :class:`SeedscopeError` (for a factor study's store it
    names the command that analyses it); without it the table comes back empty, with a note.
    """
    if not set(GROUP + ["run"]) <= set(table.columns) or (required and not all(ExperimentStore.is_store(p)
                                                                                for p in paths)):
        return table, []
    counts = table.groupby(GROUP, sort=False)["run"].nunique()
    single = list(counts[counts < 2].index)
    if not single:
        return table, []
    kept = table[~table.set_index(GROUP).index.isin(single)]
    if kept.empty and required:
        _refuse(paths, single)
    kept.attrs = table.attrs
    names = ", ".join(" / ".join(map(str, key)) for key in single[:NAMED])
    more = f" and {len(single) - NAMED} more" if len(single) > NAMED else ""
    said = f"every group ({len(single)}) holds a single finished run, so there are no seed effects to show (a seed " \
        "effect compares two runs or more)" if kept.empty else f"{len(single)} group(s) with a single finished run " \
        f"left out (a seed effect compares two runs or more): {names}{more}"
    with recorded() as notes:
        warnings.warn(said, DegenerateRunWarning, stacklevel=2)
    return kept, notes


def _refuse(paths: Sequence[Path], single: list[tuple]) -> None:
    studies = [path for path in paths if has_factor_study(ExperimentStore.open(path))]
    if studies:
        raise SeedscopeError(f"{studies[0]} holds a factor study: each of its configurations is one run, so no group "
                             f"has a seed spread to measure; its analysis is: seedscope factors analyze {studies[0]}")
    task, model = single[0]
    raise SeedscopeError(f"every group of {', '.join(map(str, paths))} holds a single finished run (task {task}, model "
                         f"{model} …): a seed effect compares two runs or more; finish more runs with --resume")
