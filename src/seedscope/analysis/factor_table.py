"""Import of a factor study run elsewhere: a plain long table of scores.

Columns: ``experiment``, a score column (``score`` unless told otherwise) and one index
column per factor holding that factor's configuration number. For experiment F the column F
is the investigated index and the other non-empty index columns together name the mitigation
group; experiment ``golden`` holds the golden-model runs. Every row of one experiment must
fill the same index columns (otherwise its groups are ragged and ambiguous).

A study that ``seedscope factors run`` recorded in an experiment store becomes the same table
(:func:`score_table_from_store`): its runs carry ``<factor>.m<j>.i<k>`` / ``golden.m<j>`` tags,
so the investigated index is k and the mitigation group is j.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from seedscope.analysis.factors import FactorGrid, FactorStudy
from seedscope.errors import SeedscopeError
from seedscope.plan import GOLDEN, parse_study_tag
from seedscope.store import CATALOG, ExperimentStore
from seedscope.tasks import get_task

MITIGATION = "mitigation"
#: metrics whose chance level is 1/K (K classes); correlations and MCC have chance level 0
PER_CLASS_CHANCE = ("accuracy", "f1_macro", "precision_macro", "recall_macro")
READERS = {
    ".csv": pd.read_csv,
    ".tsv": lambda path: pd.read_csv(path, sep="\t"),
    ".parquet": pd.read_parquet,
    ".pq": pd.read_parquet,
    ".jsonl": lambda path: pd.read_json(path, lines=True),
    ".json": pd.read_json,
}


def read_score_table(path: str | Path) -> pd.DataFrame:
    """Read a score table from CSV, TSV, Parquet, JSON or JSON Lines (by file suffix)."""
    path = Path(path)
    if path.is_dir():
        raise SeedscopeError(
            f"{path} is a folder but neither a score table nor an experiment directory (no {CATALOG})"
        )
    if not path.is_file():
        raise SeedscopeError(f"score table {path} does not exist")
    reader = READERS.get(path.suffix.lower())
    if reader is None:
        raise SeedscopeError(
            f"cannot read {path.name}: score tables must be {', '.join(sorted(READERS))} files"
        )
    try:
        return reader(path)
    except (ValueError, OSError, pd.errors.ParserError) as error:
        raise SeedscopeError(f"cannot read score table {path}: {error}") from error


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
    """Turn a long score table into a :class:`FactorStudy` (grids with NaN for missing runs)."""
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


def chance_level(metric: str, num_classes: int | None) -> float | None:
    """Score of a chance-level run: 1/K for accuracy and macro averages, 0 for MCC and correlations."""
    if metric in PER_CLASS_CHANCE:
        return 1 / num_classes if num_classes else None
    return 0.0 if metric in ("mcc", "pearson", "spearman") else None


def score_table_from_store(store: ExperimentStore, metric: str | None = None) -> tuple[pd.DataFrame, dict]:
    """The done study runs of ``store`` as a long score table (score column named after the metric), and what was left out.

    ``metric`` defaults to the task's primary metric. Returns ``(table, info)`` where info names
    the task, model, metric, chance level and the counts of study runs not done (failed /
    pending, and done runs without a value of the metric, such as a NaN correlation), which the
    caller must report: inside an analysed group they are missing runs.
    """
    runs = store.runs()
    parsed = runs["tag"].map(parse_study_tag)
    study = runs[parsed.notna()]
    if study.empty:
        raise SeedscopeError(f"{store.path} holds no factor-study runs (runs tagged by seedscope factors run)")
    pairs = study[["task", "model_name"]].drop_duplicates()
    if len(pairs) > 1:
        raise SeedscopeError(f"{store.path} mixes several tasks or models; a factor study has one of each")
    task_name = study["task"].iloc[0]
    metric = metric or study["primary_metric"].iloc[0]
    done = study[study["status"] == "done"]
    values = done["metrics"].map(lambda m: m.get(metric))
    if done.empty or values.isna().all():
        known = sorted(done["metrics"].iloc[0]) if not done.empty else []
        raise SeedscopeError(
            f"no done run of {store.path} has the metric {metric!r}"
            + (f" (metrics: {', '.join(known)})" if known else " (no run is done yet)")
        )
    valueless = values.isna()  # e.g. Pearson r of constant predictions, stored as null: a missing run, counted
    done, values = done[~valueless], values[~valueless]
    keys = pd.DataFrame(parsed[done.index].tolist(), columns=["experiment", MITIGATION, "investigation"], index=done.index)
    table = pd.DataFrame({"experiment": keys["experiment"], MITIGATION: keys[MITIGATION]})
    for factor in [e for e in pd.unique(keys["experiment"]) if e != GOLDEN]:
        table[factor] = keys["investigation"].where(keys["experiment"] == factor).astype("Int64")
    table[metric] = values.astype(float)
    task = get_task(task_name)
    num_classes = len(task.label_names) if task.task_type != "regression" else None
    info = {
        "task": task_name, "model": study["model_name"].iloc[0], "metric": metric,
        "chance": chance_level(metric, num_classes),
        "not_done": study["status"].value_counts().drop("done", errors="ignore").to_dict()
        | ({f"done without {metric}": int(valueless.sum())} if valueless.any() else {}),
    }
    return table.reset_index(drop=True), info
