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

import warnings

import numpy as np
import pandas as pd

from seedscope.factor_study.importance import FactorGrid, FactorStudy
from seedscope.errors import DuplicateRowsWarning, SeedscopeError
from seedscope.factor_study.plan import GOLDEN
from seedscope.metrics.bounds import check_score

#: private column: a row's position in the table as given (for messages naming its line)
POSITION = "_position"


def _where(table: pd.DataFrame, position: int) -> str:
    """``<file> line <n>`` of a row read from a file (:func:`seedscope.io.read_score_table`), else its row number."""
    lines = table.attrs.get("lines")
    if lines is not None and position < len(lines):
        return f"{table.attrs['source']} line {lines[position]}"
    return f"row {position + 1} of the score table"


def _shown(value) -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return "empty"
    return repr(value) if isinstance(value, str) else f"{value:g}" if isinstance(value, (int, float)) else repr(str(value))


def _index_columns(table: pd.DataFrame, metric: str) -> list[str]:
    columns = [c for c in table.columns if c not in ("experiment", metric, POSITION)]
    for column in columns:
        values = pd.to_numeric(table[column], errors="coerce")
        bad = (table[column].notna() & (values.isna() | (values != np.round(values)))).to_numpy()
        if bad.any():
            position = int(np.argmax(bad))
            raise SeedscopeError(
                f"{_where(table, position)}: column {column!r} holds non-integer value {_shown(table[column].iloc[position])}; "
                f"besides 'experiment' and the score column {metric!r} a score table holds only integer index columns"
            )
    return columns


def _without_repeats(rows: pd.DataFrame, keys: list[str], metric: str, table: pd.DataFrame, what: str) -> pd.DataFrame:
    """Rows of one run (same ``keys``) counted once when their scores agree (with a note); else an error naming both."""
    if not keys:
        return rows
    repeated = rows.duplicated(keys, keep=False)
    if not repeated.any():
        return rows
    for _, group in rows[repeated].groupby(keys, sort=False, dropna=False):
        if group[metric].nunique() > 1:
            first, second = group.iloc[0], group.iloc[1]
            raise SeedscopeError(
                f"{_where(table, int(first[POSITION]))} and {_where(table, int(second[POSITION]))}: {what} has two runs "
                f"with the same indices ({', '.join(f'{c}={first[c]}' for c in keys)}) and different scores "
                f"({first[metric]:g} vs {second[metric]:g})"
            )
    exact = rows.duplicated(keys)
    where = ", ".join(_where(table, int(p)) for p in rows.loc[exact, POSITION].head(3))
    warnings.warn(f"{what}: {int(exact.sum())} repeated run(s) ({where}{' …' if exact.sum() > 3 else ''}) have the "
                  "same indices and score as an earlier one: each run counted once", DuplicateRowsWarning, stacklevel=2)
    return rows[~exact]


def _grid(rows: pd.DataFrame, factor: str, index_columns: list[str], metric: str, table: pd.DataFrame) -> FactorGrid:
    filled = rows[index_columns].notna()
    if not filled[factor].all():
        raise SeedscopeError(f"experiment {factor!r} has rows with an empty {factor!r} index column "
                             f"({_where(table, int(rows.loc[~filled[factor], POSITION].iloc[0]))})")
    patterns = filled.drop_duplicates()
    if len(patterns) > 1:
        shapes = [", ".join(c for c in index_columns if p[c]) for _, p in patterns.iterrows()]
        raise SeedscopeError(
            f"experiment {factor!r} has ragged groups: its rows fill different index columns "
            f"({' | '.join(shapes[:2])}); every row of an experiment must fill the same ones"
        )
    keys = [c for c in index_columns if c != factor and filled[c].iloc[0]]
    rows = rows.astype({c: "int64" for c in keys + [factor]})
    rows = _without_repeats(rows, keys + [factor], metric, table, f"experiment {factor!r}")
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
    table: pd.DataFrame, *, metric: str = "score", chance: float | None = None,
    bounds: tuple[float, float] | None = None,
) -> FactorStudy:
    """Turn a long score table into a :class:`FactorStudy` (grids with NaN for missing runs).

    A run given twice with the same score counts once (a :class:`~seedscope.errors.DuplicateRowsWarning`);
    twice with different scores is an error naming both rows. Every score must be a finite, sane number, and within
    its metric's bounds (an accuracy in [0, 1]).

    Parameters
    ----------
    table : pandas.DataFrame
        Columns ``experiment``, the score and one index column per factor.
    metric : str, default "score"
        The score column.
    chance : float, optional
        The score of a chance-level run.
    bounds : (float, float), optional
        The range every score must lie in when the metric's name does not tell it (classification
        scores of ``--num-classes K``: (0, 1)).

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
    bad = scores.isna().to_numpy()
    if bad.any():
        position = int(np.argmax(bad))
        raise SeedscopeError(f"{_where(table, position)} has no numeric {metric!r} (value "
                             f"{_shown(table[metric].iloc[position])}); drop the rows of missing runs instead")
    for position, value in enumerate(scores.to_numpy(dtype=float)):
        check_score(value, metric, _where(table, position), bounds=bounds)
    unnamed = table["experiment"].isna().to_numpy()
    if unnamed.any():
        raise SeedscopeError(f"{_where(table, int(np.argmax(unnamed)))} has no 'experiment' (a factor's name, or 'golden')")
    table = table.assign(**{metric: scores, POSITION: np.arange(len(table))})
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
        grids[name] = _grid(table[experiments == name], name, index_columns, metric, table)
    golden = table[experiments == GOLDEN]
    keys = [c for c in index_columns if golden[c].notna().all()]  # golden runs told apart by, e.g., a run column
    golden = _without_repeats(golden, keys, metric, table, "the golden experiment")
    return FactorStudy(grids=grids, golden=golden[metric].to_numpy(dtype=float), metric=metric, chance=chance)
