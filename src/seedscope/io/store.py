"""An experiment store folder read as input: its finished runs' predictions, via the store itself."""

from __future__ import annotations

from pathlib import Path

from seedscope.errors import SeedscopeError
from seedscope.io.common import LINE, ReadOptions, Source
from seedscope.store import ExperimentStore


def read_store(paths: list[Path], options: ReadOptions) -> list[Source]:
    """One :class:`Source` per store (runs named by the store; ``task`` selects one task)."""
    if options.run_names is not None:
        raise SeedscopeError("run names cannot be given for an experiment store: its runs are named by their seeds")
    sources = []
    for path in paths:
        table = ExperimentStore.open(path).predictions(task=options.task)
        sources.append(Source(path, table.assign(**{LINE: range(1, len(table) + 1)}), unit="row"))
    return sources
