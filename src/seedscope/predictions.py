"""The prediction table: the one currency between runs and analysis.

A prediction table is a long pandas DataFrame with one row per (run, example):

========== ==============================================================
column     meaning
========== ==============================================================
run        run identifier (for a plain sweep: the seed), stored as str
example_id stable identifier of the evaluation example: int64 when every id is a whole number
           held in a numeric column, else str (see :func:`normal_ids`)
prediction predicted label (int or str) or value (float, regression)
label      gold label / value; optional (then only CON, no CCON)
prob_<c>   optional, one column per class c: the predicted probability
cluster    optional: examples of one cluster share a value (clustered SE)
========== ==============================================================

:func:`align_runs` checks a table and turns it into :class:`AlignedRuns`, dense S×N arrays
that every metric works on, so that no metric re-implements id matching or label coding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd

from seedscope.errors import SeedscopeError

RUN, EXAMPLE_ID, PREDICTION, LABEL = "run", "example_id", "prediction", "label"
#: optional example text column, shown beside the most unstable examples
TEXT = "text"
#: optional column grouping examples (answers of one question, prompts of one item) for clustered error bars
CLUSTER = "cluster"
#: the class of a generated answer that names no label (a prompted model's unmappable output)
INVALID = "invalid"
PROB_PREFIX = "prob_"
#: ``table.attrs`` key: run → why a reader left some of its examples out (said when runs cover different ids)
GAPS = "gaps"
#: prefix of a calibrated prompted run's predictions before calibration (``uncalibrated_prediction``,
#: ``uncalibrated_prob_<c>``), kept beside the calibrated ones
UNCALIBRATED = "uncalibrated_"
REQUIRED_COLUMNS = (RUN, EXAMPLE_ID, PREDICTION)
#: how the predictions of a table are compared: as classes, or as values (a registry task of type
#: multiple_choice is analysed as classification of its answer index)
PredictionType = Literal["classification", "regression"]

#: how far a row of probabilities may be from summing to one
PROB_SUM_TOLERANCE = 1e-3


@dataclass(frozen=True)
class AlignedRuns:
    """S runs over the same N examples, as dense arrays (row s = run ``runs[s]``).

    For classification ``predictions`` and ``labels`` hold integer codes into ``classes``
    (label −1 = missing), as small as :func:`code_dtype` allows; for regression they hold
    floats (label NaN = missing).
    """

    runs: list[str]
    example_ids: np.ndarray  # int64 or str objects (:func:`normal_ids`), in their text order (:func:`text_order`)
    task_type: PredictionType
    predictions: np.ndarray
    labels: np.ndarray | None
    classes: list = field(default_factory=list)
    probabilities: np.ndarray | None = None  # S × N × C, classes in ``classes`` order
    n_dropped: int = 0  # examples dropped by ``intersect=True``

    @property
    def n_runs(self) -> int:
        return len(self.runs)

    @property
    def n_examples(self) -> int:
        return len(self.example_ids)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    @property
    def has_labels(self) -> bool:
        return self.labels is not None


def prob_columns(table: pd.DataFrame) -> list[str]:
    """The ``prob_<class>`` columns of a table, in table order."""
    return [c for c in table.columns if str(c).startswith(PROB_PREFIX)]


def infer_task_type(values: pd.Series) -> PredictionType:
    """Regression when the predictions are floats that are not all whole numbers."""
    numeric = pd.to_numeric(values, errors="coerce")
    if numeric.isna().any() or not pd.api.types.is_float_dtype(values.dtype):
        return "classification"
    with np.errstate(invalid="ignore"):  # ±inf is no whole number: regression, whose check names it
        return "classification" if np.all(np.mod(numeric.to_numpy(), 1) == 0) else "regression"


def validate_table(table: pd.DataFrame, source: str = "prediction table") -> pd.DataFrame:
    """Check columns, types and duplicates; return a normalised copy (run as str, example_id by :func:`normal_ids`)."""
    missing = [c for c in REQUIRED_COLUMNS if c not in table.columns]
    if missing:
        raise SeedscopeError(
            f"{source}: missing column(s) {', '.join(missing)}; found {', '.join(map(str, table.columns))}"
        )
    if table.empty:
        raise SeedscopeError(f"{source}: no rows")
    table = table.copy()
    table[RUN] = table[RUN].astype(str)
    table[EXAMPLE_ID] = normal_ids(table[EXAMPLE_ID])
    if table[PREDICTION].isna().any():
        bad = table.loc[table[PREDICTION].isna(), [RUN, EXAMPLE_ID]].head(3)
        where = ", ".join(f"run {r} example {e}" for r, e in bad.itertuples(index=False))
        raise SeedscopeError(f"{source}: missing prediction ({where})")
    for column in (PREDICTION, LABEL):
        if column in table.columns:
            _require_scalars(table, column, source)
    dup = table.duplicated([RUN, EXAMPLE_ID], keep=False)
    if dup.any():
        first = table.loc[dup, [RUN, EXAMPLE_ID]].drop_duplicates().head(3)
        where = ", ".join(f"run {r} example {e}" for r, e in first.itertuples(index=False))
        raise SeedscopeError(f"{source}: duplicate example id within a run ({where})")
    return table


def normal_ids(ids: pd.Series) -> pd.Series:
    """Example ids as they are matched: int64 when the column holds whole numbers (an integer column, or floats
    that are all whole), else text, as before.

    Numbers stay numbers because turning a million of them into text and sorting that text is most of what
    reading them costs. A table mixing kinds (7 in one run, "7" in another: an object column) is text, where 7
    reads "7"; the readers already write a whole float id or "7.0" as 7 (:func:`seedscope.io.common.as_ids`).
    """
    dtype = ids.dtype
    if ids.isna().any():  # kept as text (a reader names the empty id first)
        return ids.astype(str)
    if pd.api.types.is_integer_dtype(dtype) and not (dtype == np.uint64 and ids.max() > np.iinfo(np.int64).max):
        return ids.astype(np.int64)
    if pd.api.types.is_float_dtype(dtype):
        values = ids.to_numpy(dtype=float)
        if (np.abs(values) <= 2.0 ** 53).all() and (np.mod(values, 1) == 0).all():  # exact, and NaN fails both
            return pd.Series(values.astype(np.int64), index=ids.index, name=ids.name)
    return ids.astype(str)


#: 10⁰ … 10¹⁹, every power of ten an unsigned 64-bit integer holds
_POWERS = 10 ** np.arange(20, dtype=np.uint64)


def text_order(ids: np.ndarray) -> np.ndarray:
    """Positions that put example ids in the order of their text (``"10" < "9"``), the order of every output.

    Integer ids are ordered as their decimal text would be without making it: by sign ("-" comes before the
    digits), then by the digits left-aligned (a magnitude padded with zeros to 19 digits), then the shorter
    first ("1" < "10"). So int ids and the same ids as text give the same rows, ties and resamples.
    """
    ids = np.asarray(ids)
    if ids.dtype.kind in "iu" and ids.dtype != np.uint64:  # int32 and the like: the same text
        ids = ids.astype(np.int64, copy=False)
    if ids.dtype != np.int64:
        return np.argsort(ids, kind="stable")  # text: as it sorts
    negative = ids < 0 if len(ids) and ids.min() < 0 else None
    magnitude = ids.view(np.uint64)
    if negative is not None:
        magnitude = np.negative(magnitude, where=negative, out=magnitude.copy())  # |int64 min| = 2⁶³ holds too
    width = len(str(int(magnitude.max(initial=0))))
    digits = np.ones(len(ids), dtype=np.int8)
    for power in _POWERS[1:width]:  # a comparison per digit: a fifth of a binary search's time
        digits += magnitude >= power
    padded = _POWERS[width - digits]
    padded *= magnitude
    if width <= 17 and negative is None:  # one key, padded · 32 + length < 2⁶³: a single sort
        key = padded.view(np.int64)
        key <<= 5
        key += digits
        return np.argsort(key, kind=_sort_kind(key))
    return np.lexsort((digits, padded) if negative is None else (digits, padded, ~negative))


def _sort_kind(keys: np.ndarray) -> str:
    """Timsort for keys in a few ascending runs (ids written in order: one per number of digits, merged in a tenth of
    quicksort's time), else quicksort; distinct keys (ids are) sort to the same positions either way."""
    descents = np.count_nonzero(keys[1:] < keys[:-1])
    return "stable" if descents * 1024 < len(keys) else "quicksort"


def _require_scalars(table: pd.DataFrame, column: str, source: str) -> None:
    """Refuse list- or dict-valued cells (e.g. JSONL ``"prediction": [1, 2]``): one label or value each."""
    if table[column].dtype != object:
        return
    try:
        pd.unique(table[column])
    except TypeError:  # unhashable cells: find one to name (only on this error path)
        bad = table[column].map(lambda v: isinstance(v, (list, dict, set, np.ndarray)))
        row = table.loc[bad.to_numpy()].iloc[0]
        raise SeedscopeError(
            f"{source}: run {row[RUN]} example {row[EXAMPLE_ID]} has a {type(row[column]).__name__} as its "
            f"{column}; each {column} must be one label or value"
        ) from None


def _check_coverage(table: pd.DataFrame, intersect: bool) -> tuple[pd.DataFrame, np.ndarray, int]:
    """Make every run cover the same example ids, or explain which do not."""
    all_ids = pd.unique(table[EXAMPLE_ID])
    if (table.groupby(RUN, sort=False).size() == len(all_ids)).all():
        # Ids are unique within a run (validated), so a run with as many rows as there are
        # distinct ids covers them all: the common case, without building per-run sets.
        return table, _in_text_order(all_ids), 0
    ids_by_run = {run: set(group) for run, group in table.groupby(RUN, sort=False)[EXAMPLE_ID]}
    all_ids = set().union(*ids_by_run.values())
    common = set.intersection(*ids_by_run.values())
    if len(common) == len(all_ids):
        return table, _in_text_order(all_ids), 0
    if not intersect:
        problems = []
        for run, ids in ids_by_run.items():
            lacking = _in_text_order(all_ids - ids)
            if len(lacking):
                why = table.attrs.get(GAPS, {}).get(run)
                problems.append(f"run {run} lacks {len(lacking)} (e.g. {', '.join(map(str, lacking[:3]))})"
                                + (f": {why}" if why else ""))
        raise SeedscopeError(
            "runs cover different example ids: "
            + "; ".join(problems[:5])
            + " — fix the inputs or pass --intersect to use the common ids"
        )
    if not common:
        raise SeedscopeError("runs share no example id, so there is nothing to compare")
    kept = table[table[EXAMPLE_ID].isin(common)]
    return kept, _in_text_order(common), len(all_ids) - len(common)


def _in_text_order(ids) -> np.ndarray:
    """Distinct ids (a set or an array) as an array in :func:`text_order`: int64 stays int64, text is str objects."""
    ids = np.asarray(list(ids) if isinstance(ids, set) else ids)
    ids = ids if ids.dtype == np.int64 else ids.astype(object)
    return ids[text_order(ids)]


def align_runs(
    table: pd.DataFrame,
    *,
    task_type: PredictionType | None = None,
    intersect: bool = False,
    source: str = "prediction table",
) -> AlignedRuns:
    """Validate a prediction table and return its runs as aligned S×N arrays.

    Runs keep their first-appearance order; examples are sorted by id. Runs that cover
    different ids are an error unless ``intersect`` is set, in which case only the common
    ids are kept and :attr:`AlignedRuns.n_dropped` tells how many were dropped.
    """
    table = validate_table(table, source)
    table, example_ids, n_dropped = _check_coverage(table, intersect)
    runs = list(pd.unique(table[RUN]))
    task_type = task_type or infer_task_type(table[PREDICTION])
    position = pd.Index(example_ids)
    table = table.assign(_row=pd.Index(runs).get_indexer(table[RUN]), _col=position.get_indexer(table[EXAMPLE_ID]))
    shape = (len(runs), len(example_ids))

    labels_by_example = _labels_by_example(table, position, source) if LABEL in table.columns else None
    if task_type == "regression":
        predictions = np.full(shape, np.nan)
        predictions[table["_row"], table["_col"]] = _as_float(table[PREDICTION], f"{source}: prediction")
        labels = None
        if labels_by_example is not None:
            labels = _as_float(labels_by_example, f"{source}: label")
            if np.isnan(labels).all():
                labels = None
        return AlignedRuns(runs, example_ids, task_type, predictions, labels, n_dropped=n_dropped)

    probs = prob_columns(table)
    prob_classes = [c[len(PROB_PREFIX):] for c in probs]
    values = [table[PREDICTION]] + ([labels_by_example.dropna()] if labels_by_example is not None else [])
    classes = class_list(pd.concat(values, ignore_index=True), prob_classes)
    codes = {label_key(c): i for i, c in enumerate(classes)}
    dtype = code_dtype(len(classes))
    predictions = np.full(shape, -1, dtype=dtype)
    predictions[table["_row"], table["_col"]] = _codes(table[PREDICTION], codes, dtype)
    labels = None
    if labels_by_example is not None and labels_by_example.notna().any():
        labels = _codes(labels_by_example, codes, dtype)
    probabilities = _probabilities(table, probs, prob_classes, classes, shape, source) if probs else None
    return AlignedRuns(runs, example_ids, task_type, predictions, labels, classes, probabilities, n_dropped)


def _codes(values: pd.Series, codes: dict[str, int], dtype: type) -> np.ndarray:
    """Class codes of ``values`` (−1 where missing), keying each distinct value once."""
    positions, uniques = pd.factorize(values)  # missing values get position −1 …
    lookup = np.array([codes[label_key(v)] for v in uniques] + [-1], dtype=dtype)
    return lookup[positions]  # … which picks the trailing −1


def label_key(value) -> str:
    """A label as text, the one way labels are compared everywhere (files, runs, the store).

    Codes 1, 1.0 and "1" read "1"; booleans read "True" / "False" (the SuperGLUE label names),
    so a JSON ``true`` and a CSV ``True`` are one class.
    """
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def label_keys(values: pd.Series) -> np.ndarray:
    """:func:`label_key` of every value (no missing ones), computed once per distinct value."""
    positions, uniques = pd.factorize(values)
    return np.array([label_key(v) for v in uniques], dtype=object)[positions]


def code_dtype(n_classes: int) -> type:
    """The smallest signed integer type holding class codes 0 … C − 1 and the missing code −1.

    Codes are stored this small (int8 for up to 127 classes) because every micro and macro
    kernel streams them: 100 runs × 10⁶ examples are 100 MB as int8, 800 MB as int64.
    """
    for dtype in (np.int8, np.int16, np.int32):
        if n_classes <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def class_list(values: pd.Series, prob_classes: list[str]) -> list:
    """Classes in probability-column order when given, else sorted (numerically if possible)."""
    seen = {label_key(v): v for v in pd.unique(values)}
    if prob_classes:
        unknown = sorted(set(seen) - set(prob_classes))
        if unknown:
            raise SeedscopeError(
                f"label(s) {', '.join(unknown[:5])} have no probability column (have {', '.join(prob_classes)})"
            )
        return [seen.get(c, c) for c in prob_classes]
    keys = list(seen)
    try:
        keys.sort(key=float)
    except ValueError:
        keys.sort()
    return [seen[k] for k in keys]


def _labels_by_example(table: pd.DataFrame, position: pd.Index, source: str) -> pd.Series:
    """One gold label per example; runs that disagree about a gold label are an error."""
    gold = table[[EXAMPLE_ID, LABEL]].dropna()
    keyed = gold.assign(_k=label_keys(gold[LABEL])).drop_duplicates([EXAMPLE_ID, "_k"])
    conflict = keyed[EXAMPLE_ID].duplicated(keep=False)
    if conflict.any():
        ids = ", ".join(map(str, keyed.loc[conflict, EXAMPLE_ID].unique()[:3]))
        raise SeedscopeError(f"{source}: runs give different gold labels for example(s) {ids}")
    by_id = keyed.drop_duplicates(EXAMPLE_ID).set_index(EXAMPLE_ID)[LABEL]
    return by_id.reindex(position)


def _as_float(values: pd.Series, what: str) -> np.ndarray:
    numeric = pd.to_numeric(values, errors="coerce")
    bad = numeric.isna() & values.notna()
    if bad.any():
        raise SeedscopeError(f"{what} is not numeric: {values[bad].iloc[0]!r}")
    out = numeric.to_numpy(dtype=float)
    if what.endswith("prediction") and np.isnan(out).any():
        raise SeedscopeError(f"{what} is NaN")
    if np.isinf(out).any():
        raise SeedscopeError(f"{what} is infinite ({out[np.isinf(out)][0]}); a regression value must be finite")
    return out


def probability_problem(matrix: np.ndarray, columns: list[str]) -> tuple[int, str] | None:
    """(row, what is wrong) of the first row of class probabilities that is no distribution, None when every row
    is one: each value a number in [0, 1], each row summing to 1. The one check of every reader and of
    :func:`align_runs`, so each says the same of the same row."""
    missing = np.isnan(matrix)
    outside = ~missing & ~((matrix >= 0) & (matrix <= 1))
    if missing.any() or outside.any():
        i, j = np.argwhere(missing | outside)[0]
        what = "is missing or not a number" if missing[i, j] else f"is {matrix[i, j]:g}, outside [0, 1]"
        return int(i), f"probability {columns[j]} {what}"
    sums = matrix.sum(axis=1)
    off = np.abs(sums - 1) > PROB_SUM_TOLERANCE
    if off.any():
        i = int(np.argmax(off))
        return i, f"the probabilities ({', '.join(columns)}) sum to {sums[i]:.4f}, not 1"
    return None


def _probabilities(table, probs, prob_classes, classes, shape, source) -> np.ndarray:
    matrix = table[probs].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    problem = probability_problem(matrix, probs)
    if problem is not None:
        i, what = problem
        raise SeedscopeError(f"{source}: run {table[RUN].iloc[i]} example {table[EXAMPLE_ID].iloc[i]}: {what}")
    order = [prob_classes.index(label_key(c)) for c in classes]
    out = np.zeros((*shape, len(classes)))
    out[table["_row"].to_numpy(), table["_col"].to_numpy()] = matrix[:, order]
    return out
