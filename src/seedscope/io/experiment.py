"""An experiment store folder read as input: its finished runs' predictions (and, for reports, its context)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source
from seedscope.store import ExperimentStore, views


def read_store(paths: list[Path], options: ReadOptions) -> list[Source]:
    """One :class:`Source` per store (runs named by the store; ``task`` selects one task)."""
    if options.run_names is not None:
        raise SeedscopeError("run names cannot be given for an experiment store: its runs are named by their seeds")
    sources = []
    for path in paths:
        table = ExperimentStore.open(path).predictions(task=options.task)
        sources.append(Source(path, table.assign(**{LINE: range(1, len(table) + 1)}), unit="row"))
    return sources


def store_context(paths: list[Path]) -> tuple[pd.DataFrame | None, tuple[pd.DataFrame, dict] | str | None]:
    """What a report shows of the stores among ``paths`` beside their predictions.

    Returns ``(environment, factor_scores)``: the recorded environment of every done run
    (None without a store), and the factor score table of the first store holding a factor
    study with its info (see :func:`seedscope.store.views.factor_score_table`), or the one-line
    reason it cannot be read yet (e.g. no run done), or None without such a store.
    """
    stores = [ExperimentStore.open(p) for p in paths if ExperimentStore.is_store(p)]
    if not stores:
        return None, None
    environment = pd.concat([views.run_environment(store) for store in stores], ignore_index=True)
    for store in stores:
        if views.has_factor_study(store):
            try:
                return environment, views.factor_score_table(store)
            except SeedscopeError as error:
                return environment, str(error)
    return environment, None
