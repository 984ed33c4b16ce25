"""Check each source's predictions where the file and line are still known, then merge them.

The checks of :func:`seedscope.predictions.validate_table` run again on the merged table later;
doing them here first turns "duplicate example id" into "preds.csv lines 4 and 9: …".
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from seedscope.errors import DuplicateRowsWarning, SeedscopeError
from seedscope.io.common import LINE, PASSTHROUGH_COLUMNS, Source
from seedscope.metrics.bounds import ABSURD
from seedscope.predictions import (EXAMPLE_ID, GAPS, LABEL, PREDICTION, PROB_PREFIX, RUN, label_keys, prob_columns,
                                   probability_problem)

#: columns that together name one prediction set (runs of different tasks may share a name)
GROUP_COLUMNS = ("task", "model")


def merge_sources(sources: list[Source], task_type: str | None = None) -> pd.DataFrame:
    """One long prediction table from checked sources, in input order."""
    regression = _regression(sources, task_type)
    owner: dict[tuple, Source] = {}
    frames = []
    for source, is_regression in zip(sources, regression):
        frame = _checked(source, is_regression)
        keys = [RUN, *[c for c in GROUP_COLUMNS if c in frame.columns]]
        for key in frame[keys].drop_duplicates().itertuples(index=False):
            key = tuple(key)
            if key in owner:
                label = ", ".join(f"{k} {v}" for k, v in zip(keys, key))
                raise SeedscopeError(
                    f"{label} comes from both {owner[key].path} and {source.path}; "
                    "read them separately or give the runs distinct names (run_names=)"
                )
            owner[key] = source
        frames.append(frame)
    _same_gold(sources, frames)
    table = pd.concat([frame.drop(columns=LINE) for frame in frames], ignore_index=True)
    ordered = [RUN, EXAMPLE_ID, PREDICTION] + [LABEL] * (LABEL in table.columns)
    ordered += prob_columns(table) + [c for c in PASSTHROUGH_COLUMNS if c in table.columns]
    table = table[ordered]
    # what a format says of its values (an inspect_ai numeric scorer's whole numbers are still scores)
    table.attrs[GAPS] = {run: why for source in sources for run, why in source.gaps.items()}
    table.attrs["regression_tasks"] = sorted({str(task) for source, is_regression in zip(sources, regression)
                                              if is_regression and source.regression
                                              for task in source.frame.get("task", pd.Series([None])).unique()})
    return table


def _same_gold(sources: list[Source], frames: list[pd.DataFrame]) -> None:
    """Every run gives an example of a task and model one gold label: the first two rows that disagree are named,
    file and line (across files, or across the runs of one long table)."""
    parts = [frame.loc[frame[LABEL].notna(), [c for c in (*GROUP_COLUMNS, EXAMPLE_ID, LABEL, LINE) if c in frame]]
             .assign(_source=number) for number, frame in enumerate(frames) if LABEL in frame.columns]
    if not parts:
        return
    gold = pd.concat(parts, ignore_index=True)
    gold["_key"] = label_keys(gold[LABEL])
    keys = [c for c in (*GROUP_COLUMNS, EXAMPLE_ID) if c in gold.columns]
    distinct = gold.drop_duplicates([*keys, "_key"])
    conflict = distinct[distinct.duplicated(keys, keep=False)]
    if conflict.empty:
        return
    group = conflict.groupby(keys, dropna=False, sort=False).ngroup().to_numpy()
    first, second = (row for _, row in conflict[group == group[0]].head(2).iterrows())
    where = [sources[int(row["_source"])].where(row[LINE]) for row in (first, second)]
    raise SeedscopeError(f"{where[0]} and {where[1]}: example {first[EXAMPLE_ID]} has two gold labels "
                         f"({first['_key']} vs {second['_key']}); every run must give an example the same gold label")


def _regression(sources: list[Source], task_type: str | None) -> list[bool]:
    """Per source: regression when asked, when its format or task says so, else when any source of
    unknown type holds non-whole numbers (so a regression run that happens to predict whole numbers
    in one file stays regression)."""
    if task_type is not None:
        if task_type not in ("classification", "regression"):
            raise SeedscopeError(f"task_type must be classification or regression, not {task_type!r}")
        return [task_type == "regression"] * len(sources)
    unknown = any(_has_fractions(s.frame[PREDICTION]) for s in sources if s.regression is None)
    return [s.regression if s.regression is not None else unknown for s in sources]


def _has_fractions(values: pd.Series) -> bool:
    numeric = pd.to_numeric(values, errors="coerce") if not pd.api.types.is_float_dtype(values.dtype) else values
    numeric = numeric.to_numpy(dtype=float)
    numeric = numeric[np.isfinite(numeric)]  # an infinite value is refused later, naming its line
    return bool(len(numeric)) and bool(np.any(np.mod(numeric, 1) != 0))


def _checked(source: Source, regression: bool) -> pd.DataFrame:
    """The source's frame after the empty / missing / duplicate / numeric / probability checks."""
    frame = source.frame
    if frame.empty:
        raise SeedscopeError(f"{source.path} holds no predictions")
    for column, what in ((EXAMPLE_ID, "example id"), (PREDICTION, "prediction")):
        missing = frame[column].isna()
        if missing.any():
            raise SeedscopeError(f"{source.where(frame.loc[missing, LINE].iloc[0])}: the {what} is empty")
    _check_kinds(source)
    frame = source.frame = _without_repeats(source)
    for column in (PREDICTION, LABEL):
        # float classes too: an infinite "class" is a broken value, to be named here with its line
        if column in frame.columns and (regression or pd.api.types.is_float_dtype(frame[column].dtype)):
            numbers = _numbers(source, column, allow_missing=column == LABEL)
            if regression:
                frame = frame.assign(**{column: numbers})
    _check_probabilities(source)
    return frame.assign(**{RUN: frame[RUN].astype(str)})


def _check_kinds(source: Source) -> None:
    """Ids, predictions and labels are single values (not lists or objects); probabilities are numbers."""
    frame = source.frame
    for column in (EXAMPLE_ID, PREDICTION, LABEL):
        if column in frame.columns and frame[column].dtype == object:
            nested = frame[column].map(lambda v: isinstance(v, (list, dict, tuple, np.ndarray))).to_numpy()
            if nested.any():
                first = int(np.argmax(nested))
                kind = "an object" if isinstance(frame[column].iloc[first], dict) else "a list"
                raise SeedscopeError(f"{source.where(frame[LINE].iloc[first])}: the {column.replace('_', ' ')} is "
                                     f"{kind}, not a single label or value")
    for column in prob_columns(frame):
        values = pd.to_numeric(frame[column], errors="coerce")
        bad = (values.isna() & frame[column].notna()).to_numpy()
        if bad.any():
            first = int(np.argmax(bad))
            raise SeedscopeError(f"{source.where(frame[LINE].iloc[first])}: {column} {frame[column].iloc[first]!r} "
                                 "is not a number")


def _check_probabilities(source: Source) -> None:
    """Each row's class probabilities are a distribution (:func:`~seedscope.predictions.probability_problem`),
    checked per task and model over the columns that group uses, where the file and line are still known."""
    frame = source.frame
    columns = prob_columns(frame)
    keys = [c for c in GROUP_COLUMNS if c in frame.columns]
    for _, rows in (frame.groupby(keys, sort=False, dropna=False) if keys and columns else [(None, frame)]):
        used = [c for c in columns if rows[c].notna().any()]
        if not used:
            continue
        problem = probability_problem(rows[used].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float), used)
        if problem is not None:
            raise SeedscopeError(f"{source.where(rows[LINE].iloc[problem[0]])}: {problem[1]}")
        classes = {column[len(PROB_PREFIX):] for column in used}
        for column in (PREDICTION, LABEL):
            values = rows[column].dropna() if column in rows.columns else pd.Series(dtype=object)
            keys = label_keys(values)
            unknown = ~np.isin(keys, list(classes))
            if unknown.any():
                first = int(np.argmax(unknown))
                raise SeedscopeError(f"{source.where(rows.loc[values.index[first], LINE])}: the {column} {keys[first]} "
                                     f"has no probability column (columns: {', '.join(used)})")


def _without_repeats(source: Source) -> pd.DataFrame:
    """The source's frame with each example counted once per run: a row repeated verbatim (every column but the
    line) is dropped with a note; rows of one example that disagree are an error naming both lines."""
    frame = source.frame
    keys = [RUN, EXAMPLE_ID, *[c for c in GROUP_COLUMNS if c in frame.columns]]
    duplicated = frame.duplicated(keys, keep=False)
    if not duplicated.any():
        return frame
    content = [c for c in frame.columns if c != LINE]
    text = frame[duplicated].astype(str)  # compared as text: NaN equals NaN, a list is comparable
    for _, group in text.groupby(keys, sort=False):
        if len(group[content].drop_duplicates()) > 1:
            rows = frame.loc[group.index]
            first = rows.iloc[0]
            lines = " and ".join(str(int(n)) for n in rows[LINE].head(2))
            raise SeedscopeError(
                f"{source.path}: example id {first[EXAMPLE_ID]} appears {len(rows)} times in run {first[RUN]} "
                f"({source.unit}s {lines}) with different values; each example must be predicted once per run"
            )
    repeated = pd.Series(False, index=frame.index)
    repeated[duplicated] = text.duplicated(content).to_numpy()
    lines = ", ".join(str(int(n)) for n in frame.loc[repeated, LINE].head(5))
    warnings.warn(f"{source.path}: {int(repeated.sum())} repeated {source.unit}(s) ({source.unit}s {lines}"
                  f"{' …' if repeated.sum() > 5 else ''}) hold the same prediction as an earlier one: each example "
                  "counted once", DuplicateRowsWarning, stacklevel=2)
    return frame[~repeated].reset_index(drop=True)


def _numbers(source: Source, column: str, *, allow_missing: bool) -> pd.Series:
    """A regression column as floats; a non-numeric, infinite or absurd or (for predictions) NaN value is located."""
    values = source.frame[column]
    numeric = pd.to_numeric(values, errors="coerce")
    bad = numeric.isna() & (values.notna() if allow_missing else True)
    absurd = ~(numeric.abs() <= ABSURD) & numeric.notna()
    if bad.any() or absurd.any():
        first = (bad | absurd).to_numpy().argmax()
        what = (f"{numeric.iloc[first]:g} is not a plausible value (infinite or beyond ±{ABSURD:g})" if absurd.iloc[first]
                else "is empty" if pd.isna(values.iloc[first]) else
                f"{values.iloc[first]!r} is not a number (regression values must be numeric)")
        raise SeedscopeError(f"{source.where(source.frame[LINE].iloc[first])}: {column} {what}")
    return numeric.astype(float)
