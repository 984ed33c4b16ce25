"""Per-run score tables: one row per run, the form in which most papers publish their seeds.

Long (``model_name, dataset_name, seed, acc, f1``): a numeric column is a metric, never a system
key; the metrics are those given with ``metric=``, else every numeric column (one holding the
same value in every row and not named like a metric is a setting, such as a learning rate, and
said so); a ``task`` / ``dataset`` column names the task; the text columns that vary tell
systems apart (or name them with ``system_columns=``); a file where nothing varies is one system
named after the file. Wide (``seed, bert, roberta``): without a metric-named or a text column,
every numeric column is one system. The run is the run / seed column, found by name (``run``,
``seed``, ``--seed``, ``trial``, ``replicate``, ``rep``, ``epoch`` …, any case) or by values such
as ``Run 0`` / ``seed_3`` (or ``run_column=``); without one every row is a run, and runs are then
never paired across systems.

Spreadsheet exports are read as they come: a UTF-8 byte-order mark, CR-only or CRLF line ends,
empty rows, a ``;`` delimiter with decimal commas (sniffed, :mod:`seedscope.io.results.delimited`),
percentages (``85.3%`` is read as 0.853) and summary rows (Mean, Standard deviation …, skipped);
a row repeated verbatim is counted once. Each of these is said in a note; nothing is rescaled or
dropped silently (``scale=0.01`` converts a column of percentages written without ``%``). Scores must
be finite and sane (at most 1e15 in magnitude), and a bounded metric (accuracy, F1, exact match …
in [0, 1]; MCC and correlations in [−1, 1]) within its bounds after ``scale``: ``acc 85`` is refused
with its line unless ``scale=0.01``.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import pandas as pd

from seedscope.errors import DuplicateRowsWarning, ReadingChoiceWarning, RescaledValuesWarning, SeedscopeError
from seedscope.io.common import LINE, ReadOptions, as_ids, finite_numbers, pick_column, require_readable, run_names
from seedscope.io.detect import TABLE_SUFFIXES
from seedscope.io.results.lm_eval_perplexity import is_perplexity_log, read_perplexities
from seedscope.io.results.run_score_table import RUN, SYSTEM, TASK, RunScores
from seedscope.io.results.tabular import ID_NAMES, PREDICTION_NAMES, load_table, read_delimited
from seedscope.notes import noted
from seedscope.io.validate import damaged_parquet, names_unreadable_files
from seedscope.metrics.bounds import ABSURD, bound_of, check_score

#: private column: the file a row came from (for messages naming two lines of two files)
SOURCE = "_source"
#: run / seed columns of a score table (compared lower-case)
RUN_NAMES = ("run", "seed", "--seed", "run_id", "random_seed", "seed_id", "trial", "replicate", "rep", "epoch")
#: values that name runs in a text column: ``Run 0``, ``seed_3``, ``trial-2``
RUN_VALUE = re.compile(r"^(run|seed|trial|replicate|rep|epoch)[\s_#:=-]*\d+$", re.IGNORECASE)
#: a table with one of these is per-example predictions, not per-run scores
PREDICTION_COLUMNS = {*ID_NAMES, *PREDICTION_NAMES}
#: columns naming the task of a row
TASK_NAMES = ("task", "task_name", "dataset", "dataset_name", "benchmark")
#: metric names recognised as score columns (after an ``eval_`` / ``test_`` / ``validation_`` prefix)
METRIC_NAMES = (
    "accuracy", "acc", "acc_norm", "f1", "f1_macro", "macro_f1", "f1_micro", "micro_f1", "mcc",
    "matthews_correlation", "pearson", "pearsonr", "spearman", "spearmanr", "exact_match", "em", "score",
    "precision", "recall", "auc", "roc_auc", "bleu", "rouge1", "rouge2", "rougel", "combined_score",
)
METRIC_PREFIX = re.compile(r"^(eval|test|validation|val|dev)[_/]", re.IGNORECASE)
#: first cells of spreadsheet summary rows, never runs (compared lower-case, without a trailing colon)
SUMMARY_LABELS = frozenset({
    "min", "minimum", "max", "maximum", "mean", "average", "avg", "median", "sum", "total", "count", "n",
    "std", "stdev", "std dev", "std. dev.", "sd", "standard deviation", "var", "variance", "se", "sem",
    "standard error", "stderr", "range", "ci", "95% ci",
})


def is_metric_name(column) -> bool:
    """``acc`` / ``eval_f1`` / ``test/mcc`` look like metric columns."""
    return _bare(column) in METRIC_NAMES


def _bare(column) -> str:
    return METRIC_PREFIX.sub("", str(column)).strip().lower()


def looks_like_run_scores(path: Path, fmt: str | None = None) -> bool:
    """A plain table with numeric columns but no example-id or prediction column (read only its head)."""
    fmt = fmt or TABLE_SUFFIXES.get(path.suffix.lower())
    if path.is_dir() or fmt is None:
        return False
    if fmt == "parquet" and {c.lower() for c in parquet_column_names(path)} & PREDICTION_COLUMNS:
        return False  # the schema says so: no rows decoded (a million of them, in a large prediction file)
    try:
        head = read_head(path, fmt)
    except (SeedscopeError, ValueError, OSError):
        return False
    columns = [str(c) for c in head.columns if c != LINE]
    if {c.lower() for c in columns} & PREDICTION_COLUMNS:
        return False
    return any(is_metric_name(c) for c in columns) or any(
        _is_numeric(head[c]) or _is_numeric(head[c].astype("string").str.rstrip("%").str.replace(",", ".", regex=False))
        for c in columns if c.lower() not in RUN_NAMES
    )


def parquet_column_names(path: Path) -> list[str]:
    """A Parquet file's column names from its footer; none when it cannot be read (its head says why)."""
    import pyarrow.parquet as pq

    try:
        return pq.read_schema(path).names
    except Exception:  # pyarrow raises several types for a file that is not Parquet
        return []


def read_head(path: Path, fmt: str) -> pd.DataFrame:
    """The first rows of a plain table (enough to see its columns), without reading the whole file."""
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            batch = next(pq.ParquetFile(path).iter_batches(batch_size=50), None)
        except Exception as error:  # pyarrow raises several types for a file that is not Parquet
            raise damaged_parquet(path, error) from None
        if batch is None:
            raise SeedscopeError(f"{path} has column names but no rows")
        return batch.to_pandas()
    if fmt in ("csv", "tsv"):
        return read_delimited(path, fmt, nrows=50)
    raw, _ = load_table(path, fmt, ReadOptions())
    return raw.head(50)


@names_unreadable_files
@noted
def read_run_scores(
    paths: str | os.PathLike | Iterable[str | os.PathLike],
    *,
    run_column: str | None = None,
    metric: str | Sequence[str] | None = None,
    system_columns: Sequence[str] | None = None,
    task: str | None = None,
    fmt: str | None = None,
    names: Sequence[str] | None = None,
    scale: float | None = None,
) -> RunScores:
    """Per-run scores of one or more score tables (long or wide), as one :class:`RunScores`.

    lm-eval ``--log_samples`` of a perplexity task are read as their perplexities per run
    (:mod:`seedscope.io.results.lm_eval_perplexity`). ``metric``: the score column(s), default every numeric column; ``system_columns``: the
    columns whose values name a system; ``task`` keeps that task's rows; ``names`` names the
    systems of files that hold one system each (default: the file names); ``scale`` multiplies
    every score (``0.01`` turns percentages written without ``%`` into fractions).

    Parameters
    ----------
    paths : path or list of paths
        Score tables (CSV, TSV, JSON lines, Parquet, Excel …).
    run_column, metric, system_columns, task, names, scale
        As above.

    Returns
    -------
    RunScores

    Examples
    --------
    >>> from seedscope import read_run_scores
    >>> import pandas as pd
    >>> scores = pd.DataFrame({"system": ["A"] * 3 + ["B"] * 3, "run": [1, 2, 3] * 2,
    ...                        "accuracy": [0.80, 0.82, 0.85, 0.78, 0.83, 0.80]})
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "scores.csv"
    >>> scores.to_csv(path, index=False)
    >>> read_run_scores(path).metrics
    ['accuracy']
    """
    from seedscope.io.results.scores import table_format

    paths = [Path(paths)] if isinstance(paths, (str, os.PathLike)) else [Path(p) for p in paths]
    if not paths:
        raise SeedscopeError("no input given: name at least one score table")
    if scale is not None and not (np.isfinite(scale) and scale > 0):
        raise SeedscopeError(f"--scale must be a positive number (0.01 turns percentages into fractions), not {scale}")
    metrics = [metric] if isinstance(metric, str) else (list(metric) if metric else None)
    if any(is_perplexity_log(path) for path in paths):  # lm-eval logs of a perplexity task: a score per run
        return read_perplexities(paths, names=tuple(names) if names else None, task=task)
    file_names = run_names(paths, tuple(names) if names else None)
    frames, paired = [], []
    for path, name in zip(paths, file_names):
        require_readable(path)
        if path.is_dir():
            raise SeedscopeError(f"{path} is a folder; pass the score tables themselves")
        raw, _ = load_table(path, table_format(path, fmt), ReadOptions(run_column=run_column))
        frame, has_runs = _read_one(raw, path, name, run_column, metrics, system_columns)
        frames.append(frame.assign(**{SOURCE: str(path)}))
        paired.append(has_runs)
    table = pd.concat(frames, ignore_index=True)
    metric_columns = [c for c in table.columns if c not in (SYSTEM, RUN, TASK, LINE, SOURCE)]
    table = _scaled(table, metric_columns, scale)
    if task is not None:
        if TASK not in table.columns:
            table[TASK] = task
        elif not (table[TASK] == task).any():
            raise SeedscopeError(f"no runs of task {task!r} (tasks in the tables: {', '.join(map(str, table[TASK].unique()))})")
        table = table[table[TASK] == task].reset_index(drop=True)
    keys = [c for c in (TASK, SYSTEM, RUN) if c in table.columns]
    table = _without_repeats(table, keys, metric_columns)
    return RunScores(table[keys + metric_columns].reset_index(drop=True), metric_columns, all(paired))


def _read_one(raw: pd.DataFrame, path: Path, name: str, run_column, metrics, system_columns) -> tuple[pd.DataFrame, bool]:
    raw = _without_summary_rows(raw, path)
    columns = [c for c in raw.columns if c != LINE]
    run = _run_column(raw, columns, run_column, path)
    task = pick_column(columns, None, TASK_NAMES, path)
    rest = [c for c in columns if c not in (run, task)]
    for column in rest:
        raw[column], percent = _percentages(raw[column], raw[LINE], path, column)
        if percent:
            warnings.warn(f"{path}: {column} was read as percentages ({percent} → {_fraction(percent)}); every "
                          "number seedscope shows is a fraction", RescaledValuesWarning, stacklevel=2)
    numeric = [c for c in rest if is_metric_name(c) or _is_numeric(raw[c])]
    text = [c for c in rest if c not in numeric]
    if metrics is not None:
        for column in metrics:
            pick_column(columns, column, (), path)
        scores = list(metrics)
    elif any(is_metric_name(c) for c in numeric) or text or system_columns:
        settings = [c for c in numeric if not is_metric_name(c) and raw[c].nunique(dropna=True) <= 1
                    and c not in (system_columns or ())]
        scores = [c for c in numeric if c not in settings and c not in (system_columns or ())]
        if settings:
            warnings.warn(f"{path}: {', '.join(map(str, settings))} hold(s) one value in every row: read as a "
                          "setting, not a metric", ReadingChoiceWarning, stacklevel=2)
    else:
        scores = []
    if scores:
        frame = _long(raw, path, name, run, task, scores, text, system_columns)
    else:
        frame = _wide(raw, path, run, task, numeric or rest)
    for column in [c for c in frame.columns if c not in (SYSTEM, RUN, TASK, LINE)]:
        frame[column] = finite_numbers(frame, column, path)
    return frame, run is not None


def _run_column(raw: pd.DataFrame, columns: list, given: str | None, path: Path) -> str | None:
    """The run / seed column: named (``--run-column``), by its name, or by values such as ``Run 0``."""
    named = pick_column(columns, given, RUN_NAMES, path)
    if named is not None:
        return named
    for column in columns:
        values = raw[column].dropna().astype(str).str.strip()
        if len(values) and not pd.api.types.is_numeric_dtype(raw[column]) and values.str.fullmatch(RUN_VALUE).all():
            warnings.warn(f"{path}: runs named by {column} (values such as {values.iloc[0]!r})", ReadingChoiceWarning)
            return column
    return None


def _percentages(values: pd.Series, lines: pd.Series, path: Path, column) -> tuple[pd.Series, str | None]:
    """``85.3%`` → 0.853 for a column written as percentages (and the first such value, for the note)."""
    if pd.api.types.is_numeric_dtype(values):
        return values, None
    text = values.astype("string").str.strip()
    marked = text.str.endswith("%").fillna(False)
    if not marked.any():
        return values, None
    plain = text.notna() & ~marked
    if plain.any():
        line = int(lines[plain.to_numpy()].iloc[0])
        raise SeedscopeError(f"{path} line {line}: {column} mixes percentages ({text[marked].iloc[0]}) and plain "
                             f"numbers ({text[plain].iloc[0]}); write every value of a column the same way")
    numbers = pd.to_numeric(text.str[:-1].str.replace(",", ".", regex=False), errors="coerce") / 100
    bad = numbers.isna() & text.notna()
    if bad.any():
        line = int(lines[bad.to_numpy()].iloc[0])
        raise SeedscopeError(f"{path} line {line}: score {column} {text[bad].iloc[0]!r} is not a finite number")
    return numbers, str(text[marked].iloc[0])


def _fraction(percent: str) -> str:
    return f"{float(percent[:-1].replace(',', '.')) / 100:g}"


def _is_numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) or _mostly_numbers(values)


def _scaled(table: pd.DataFrame, metrics: list, scale: float | None) -> pd.DataFrame:
    """Every score times ``scale``, then checked: finite, sane, and within its bounds for a bounded metric."""
    if scale is not None and scale != 1:
        warnings.warn(f"every score was multiplied by {scale:g} (--scale)", RescaledValuesWarning, stacklevel=2)
        table = table.assign(**{column: table[column] * scale for column in metrics})
    for column in metrics:
        values = table[column].to_numpy(dtype=float)
        bounds = bound_of(column) or (-ABSURD, ABSURD)
        bad = ~((values >= bounds[0]) & (values <= bounds[1]))
        if bad.any():
            row = table.iloc[int(np.flatnonzero(bad)[0])]
            check_score(row[column], column, f"{row[SOURCE]} line {int(row[LINE])}", scale_hint=scale in (None, 1))
    return table


def _without_repeats(table: pd.DataFrame, keys: list[str], metrics: list) -> pd.DataFrame:
    """A row repeated verbatim (same run, same scores) counts once, with a note; rows that share a run but
    disagree are an error naming both lines."""
    exact = table.duplicated(keys + metrics)
    if exact.any():
        where = ", ".join(f"{Path(s).name} line {int(line)}" for s, line in zip(table.loc[exact, SOURCE], table.loc[exact, LINE]))
        warnings.warn(f"dropped {int(exact.sum())} exact duplicate row(s) ({where}): each run counted once", DuplicateRowsWarning)
        table = table[~exact]
    clash = table.duplicated(keys, keep=False)
    if clash.any():
        same = (table[keys] == table.loc[clash, keys].iloc[0]).all(axis=1)
        first, second = table[clash & same].head(2).to_dict("records")
        differs = next((m for m in metrics if first[m] != second[m]), metrics[0])
        raise SeedscopeError(
            f"{first[SOURCE]} line {first[LINE]} and {second[SOURCE]} line {second[LINE]}: run {first[RUN]} of system "
            f"{first[SYSTEM]} appears twice with different scores ({differs} {first[differs]:g} vs {second[differs]:g}); "
            "name the columns that tell systems apart with --system-column, or the run column with --run-column"
        )
    return table


def _without_summary_rows(raw: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Drop spreadsheet summary rows (a cell reading Mean, Standard deviation …; empty rows are gone already)."""
    labels = raw.drop(columns=LINE).apply(_summary_label, axis=1)
    summary = labels.notna().to_numpy()
    if summary.any():
        named = ", ".join(f"{label} (line {line})" for label, line in zip(labels[summary], raw.loc[summary, LINE]))
        warnings.warn(f"{path}: skipped summary row(s) {named}: they are not runs", ReadingChoiceWarning, stacklevel=2)
    kept = raw[~summary].reset_index(drop=True)
    if kept.empty:
        raise SeedscopeError(f"{path} holds no runs (only empty or summary rows)")
    return kept


def _summary_label(row: pd.Series) -> str | None:
    for value in row:
        if isinstance(value, str) and value.strip().rstrip(":").lower() in SUMMARY_LABELS:
            return value.strip()
    return None


def _long(raw, path, name, run, task, scores, text, system_columns) -> pd.DataFrame:
    if system_columns:
        for column in system_columns:
            pick_column(list(raw.columns), column, (), path)
        varying = list(system_columns)
    else:
        varying = [c for c in text if raw[c].nunique(dropna=False) > 1]
    frame = pd.DataFrame({column: raw[column] for column in scores})
    if varying:
        parts = raw[varying].astype(str)
        frame.insert(0, SYSTEM, parts.iloc[:, 0] if len(varying) == 1 else
                     parts.apply(lambda row: ", ".join(f"{c}={v}" for c, v in row.items()), axis=1))
        if not system_columns:
            warnings.warn(f"{path}: systems told apart by {', '.join(map(str, varying))} (name others with "
                          "--system-column)", ReadingChoiceWarning, stacklevel=2)
    else:
        frame.insert(0, SYSTEM, name)
    frame.insert(1, RUN, _runs(raw, run, path))
    if task is not None:
        frame.insert(0, TASK, raw[task].astype(str).to_numpy())
    frame[LINE] = raw[LINE].to_numpy()
    return frame


def _wide(raw, path, run, task, rest) -> pd.DataFrame:
    """One numeric column per system; each row one run of every system."""
    systems = [c for c in rest if _is_numeric(raw[c])]
    if not systems:
        raise SeedscopeError(
            f"{path}: found no score column (no column named like a metric, such as acc, f1 or mcc, and no numeric "
            f"column; available: {', '.join(map(str, rest))}); name it with --metric"
        )
    warnings.warn(f"{path}: a wide table, one system per column ({', '.join(map(str, systems))})", ReadingChoiceWarning)
    long = raw.assign(**{RUN: _runs(raw, run, path)}).melt(
        id_vars=[RUN, LINE, *([task] if task else [])], value_vars=systems, var_name=SYSTEM, value_name="score"
    )
    long[SYSTEM] = long[SYSTEM].astype(str)
    if task is not None:
        long = long.rename(columns={task: TASK})
        long[TASK] = long[TASK].astype(str)
    return long[[c for c in (TASK, SYSTEM, RUN, "score", LINE) if c in long.columns]]


def _mostly_numbers(values: pd.Series) -> bool:
    return bool(pd.to_numeric(values, errors="coerce").notna().mean() >= 0.5)


def _runs(raw: pd.DataFrame, run: str | None, path: Path) -> np.ndarray:
    if run is None:
        return np.array([f"row {i}" for i in range(1, len(raw) + 1)], dtype=object)
    if raw[run].isna().any():
        line = int(raw.loc[raw[run].isna(), LINE].iloc[0])
        raise SeedscopeError(f"{path} line {line}: the run ({run}) is empty")
    return as_ids(raw[run]).to_numpy()
