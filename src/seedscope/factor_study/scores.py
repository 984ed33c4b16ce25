"""A factor study from a plain long table of scores (run elsewhere, or read from a store).

Columns: ``experiment``, a score column (``score`` unless told otherwise) and one index
column per factor holding that factor's configuration number. For experiment F the column F
is the investigated index and the other non-empty index columns together name the mitigation
group; experiment ``golden`` holds the golden-model runs. Every row of one experiment must
fill the same index columns (otherwise its groups are ragged and ambiguous).

A study that ``seedscope factors run`` recorded in an experiment store becomes the same table
(:func:`seedscope.store.views.factor_score_table`); files are read by
:func:`seedscope.io.read_score_table`. This module only turns a table into score grids.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from seedscope.factor_study.importance import FactorGrid, FactorStudy
from seedscope.errors import SeedscopeError
from seedscope.factor_study.plan import GOLDEN



def _index_columns(table: pd.DataFrame, metric: str) -> list[str]:
    columns = [c for c in table.columns if c not in ("experiment", metric)]
    for column in columns:
        values = pd.to_numeric(table[column], errors="coerce")
        bad = table[column].notna() & (values.isna() | (values != np.round(values)))
        if bad.any():
            raise SeedscopeError(
                f"column {column!r} holds non-integer value {table.loc[bad.idxmax(), column]}; besides "
                f"'experiment' and the score column {metric!r} a score table holds only integer index columns"
            )
    return columns


def _grid(rows: pd.DataFrame, factor: str, index_columns: list[str], metric: str) -> FactorGrid:
    filled = rows[index_columns].notna()
    if not filled[factor].all():
        raise SeedscopeError(f"experiment {factor!r} has rows with an empty {factor!r} index column")
    patterns = filled.drop_duplicates()
    if len(patterns) > 1:
        shapes = [", ".join(c for c in index_columns if p[c]) for _, p in patterns.iterrows()]
        raise SeedscopeError(
            f"experiment {factor!r} has ragged groups: its rows fill different index columns "
            f"({' | '.join(shapes[:2])}); every row of an experiment must fill the same ones"
        )
    keys = [c for c in index_columns if c != factor and filled[c].iloc[0]]
    rows = rows.astype({c: "int64" for c in keys + [factor]})
    if rows.duplicated(keys + [factor]).any():
        dup = rows[rows.duplicated(keys + [factor], keep=False)].iloc[0]
        raise SeedscopeError(
            f"experiment {factor!r} has two runs with the same indices "
            f"({', '.join(f'{c}={dup[c]}' for c in keys + [factor])})"
        )
    if keys:
        group_index = pd.MultiIndex.from_frame(rows[keys]) if len(keys) > 1 else pd.Index(rows[keys[0]])
    else:
        group_index = pd.Index(np.zeros(len(rows), dtype=int))
    group_codes, group_labels = pd.factorize(group_index, sort=True)
    config_codes, config_labels = pd.factorize(rows[factor], sort=True)
    scores = np.full((len(group_labels), len(config_labels)), np.nan)
    scores[group_codes, config_codes] = rows[metric].to_numpy(dtype=float)
    groups = tuple(dict(zip(keys, np.atleast_1d(label).tolist())) for label in group_labels) if keys else ({},)
    return FactorGrid(factor, scores, groups=groups, configs=tuple(config_labels.tolist()))


def study_from_table(
    table: pd.DataFrame, *, metric: str = "score", chance: float | None = None
) -> FactorStudy:
    """Turn a long score table into a :class:`FactorStudy` (grids with NaN for missing runs).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``experiment``, the score and one index column per factor.
    metric : str, default "score"
        The score column.
    chance : float, optional
        The score of a chance-level run.

    Returns
    -------
    FactorStudy

    Examples
    --------
    >>> from seedscope import study_from_table
    >>> import numpy as np, pandas as pd
    >>> rows = [{"experiment": "golden", "score": 0.8 + 0.01 * np.sin(i)} for i in range(20)] + [
    ...     {"experiment": "order", "order": i, "run": g, "score": 0.8 + 0.005 * np.cos(i * g)}
    ...     for g in range(1, 6) for i in range(1, 5)]  # 5 mitigation groups × 4 data orders
    >>> study = study_from_table(pd.DataFrame(rows))
    >>> list(study.grids), study.golden.shape
    (['order'], (20,))
    """
    if table.empty:
        raise SeedscopeError("the score table is empty")
    for column in ("experiment", metric):
        if column not in table.columns:
            raise SeedscopeError(
                f"the score table has no {column!r} column (it has {', '.join(map(repr, table.columns))})"
            )
    scores = pd.to_numeric(table[metric], errors="coerce")
    bad = scores.isna()
    if bad.any():
        raise SeedscopeError(
            f"row {int(np.argmax(bad.to_numpy())) + 1} of the score table has no numeric {metric!r} "
            f"(value {table[metric][bad].iloc[0]!r}); drop the rows of missing runs instead"
        )
    unnamed = table["experiment"].isna()
    if unnamed.any():
        raise SeedscopeError(
            f"row {int(np.argmax(unnamed.to_numpy())) + 1} of the score table has no 'experiment' "
            "(a factor's name, or 'golden')"
        )
    table = table.assign(**{metric: scores})
    index_columns = _index_columns(table, metric)
    experiments = table["experiment"].astype(str)
    if GOLDEN not in set(experiments):
        raise SeedscopeError("the score table has no 'golden' experiment (the golden-model runs)")
    grids = {}
    for name in pd.unique(experiments):
        if name == GOLDEN:
            continue
        if name not in index_columns:
            raise SeedscopeError(
                f"experiment {name!r} has no index column of the same name (index columns: "
                f"{', '.join(map(repr, index_columns)) or 'none'})"
            )
        grids[name] = _grid(table[experiments == name], name, index_columns, metric)
    golden = table.loc[experiments == GOLDEN, metric].to_numpy(dtype=float)
    return FactorStudy(grids=grids, golden=golden, metric=metric, chance=chance)
