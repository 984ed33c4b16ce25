"""The result of reading per-run score tables: one row per (system, run), one column per metric."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from seedscope.errors import SeedscopeError

SYSTEM, RUN, TASK = "system", "run", "task"


@dataclass
class RunScores:
    """Per-run scores: ``table`` has columns system, run, (task,) and one column per metric.

    ``paired``: runs were named by a run / seed column, so equal names across systems are
    matched seeds; ``notes`` say what was inferred or skipped (the warnings raised while reading).

    Parameters
    ----------
    table : pandas.DataFrame
    metrics : list of str
        The score columns.
    paired : bool
    notes : list of str

    Returns
    -------
    RunScores
        Built by :func:`read_run_scores`.

    Examples
    --------
    >>> from seedscope import read_run_scores
    >>> import pandas as pd
    >>> scores = pd.DataFrame({"system": ["A"] * 3 + ["B"] * 3, "run": [1, 2, 3] * 2,
    ...                        "accuracy": [0.80, 0.82, 0.85, 0.78, 0.83, 0.80]})
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> scores.to_csv(path, index=False)
    >>> found = read_run_scores(path)
    >>> found.table.shape, found.paired
    ((6, 3), True)
    """

    table: pd.DataFrame
    metrics: list[str]
    paired: bool
    notes: list[str] = field(default_factory=list)

    @property
    def systems(self) -> list[str]:
        return list(dict.fromkeys(self.table[SYSTEM]))

    @property
    def tasks(self) -> list[str]:
        return list(dict.fromkeys(self.table[TASK])) if TASK in self.table.columns else []

    def series(self, metric: str | None = None) -> tuple[dict[str, pd.Series], str]:
        """(system → per-run values indexed by run, the metric): what a comparison of one task takes."""
        if len(self.tasks) > 1:
            raise SeedscopeError(f"the score tables hold several tasks ({', '.join(self.tasks)}); pick one with --task")
        if metric is None and len(self.metrics) > 1:
            raise SeedscopeError(f"the score tables hold several metrics ({', '.join(self.metrics)}); pick one with --metric")
        chosen = metric or self.metrics[0]
        if len(self.systems) < 2:
            raise SeedscopeError(f"a comparison needs two or more systems; the score tables hold one ({self.systems[0]})")
        table = self.table
        return {name: table.loc[table[SYSTEM] == name].set_index(RUN)[chosen] for name in self.systems}, chosen
