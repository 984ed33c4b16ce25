"""The score θ of a system on a subset, and the pool of per-example values it is computed from.

θ is a function of the per-example columns' subset means: a mean, an accuracy, or a ratio
such as faithfulness (m(circuit) − m(empty)) / (m(model) − m(empty)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Mapping

import numpy as np
import pandas as pd

from seedscope.analysis.checks import check_one_task
from seedscope.errors import SeedscopeError
from seedscope.predictions import AlignedRuns, align_runs

SYSTEM, EXAMPLE_ID, SCORE = "system", "example_id", "score"


@dataclass(frozen=True)
class ScoreSpec:
    """How θ is computed from per-example columns: a function of the columns' subset means.

    ``mean`` (column ``score``): θ = mean of the score. ``accuracy`` (columns ``prediction``,
    ``label``): θ = mean of prediction == label. ``ratio`` (columns num, base, ref):
    θ = (m(num) − m(base)) / (m(ref) − m(base)), e.g. faithfulness =
    (m(circuit) − m(empty)) / (m(model) − m(empty)).
    """

    kind: Literal["mean", "accuracy", "ratio"]
    columns: tuple[str, ...]

    @property
    def text(self) -> str:
        defaults = {"mean": (SCORE,), "accuracy": ("prediction", "label")}
        if defaults.get(self.kind) == self.columns:
            return self.kind
        return f"{self.kind}:{','.join(self.columns)}"

    @property
    def numeric_columns(self) -> tuple[str, ...]:
        """The columns that must hold numbers (an accuracy compares labels, which may be text)."""
        return () if self.kind == "accuracy" else self.columns

    @property
    def n_values(self) -> int:
        """How many per-example value columns θ needs (accuracy collapses to one)."""
        return 3 if self.kind == "ratio" else 1

    def values(self, table: pd.DataFrame, source: str) -> np.ndarray:
        """Per-example value columns (rows of ``table``) as an (rows × n_values) float array."""
        missing = [c for c in self.columns if c not in table.columns]
        if missing:
            raise SeedscopeError(
                f"{source}: score '{self.text}' needs column(s) {', '.join(missing)}; "
                f"found {', '.join(map(str, table.columns))}"
            )
        if self.kind == "accuracy":
            prediction, label = (table[c] for c in self.columns)
            for name, column in zip(self.columns, (prediction, label)):
                if column.isna().any():
                    raise SeedscopeError(f"{source}: column {name} has missing values (e.g. example {_first_id(table, column.isna())})")
            return _equal(prediction, label).astype(float)[:, None]
        out = np.empty((len(table), len(self.columns)))
        for j, name in enumerate(self.columns):
            numeric = pd.to_numeric(table[name], errors="coerce")
            bad = numeric.isna() | ~np.isfinite(numeric.to_numpy(dtype=float, na_value=np.nan))
            if bad.any():
                raise SeedscopeError(
                    f"{source}: column {name} holds a NaN, infinite or non-numeric score (example {_first_id(table, bad)})"
                )
            out[:, j] = numeric.to_numpy(dtype=float)
        return out

    def combine(self, means: np.ndarray) -> np.ndarray:
        """θ from column means (last axis = this spec's value columns); a zero ratio denominator gives NaN."""
        if self.kind != "ratio":
            return means[..., 0]
        numerator = means[..., 0] - means[..., 1]
        denominator = means[..., 2] - means[..., 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(denominator == 0, np.nan, numerator / np.where(denominator == 0, 1, denominator))


def _equal(prediction: pd.Series, label: pd.Series) -> np.ndarray:
    """Prediction == label: numerically when both columns are numbers (so 1 equals 1.0), else as text."""
    numbers = [pd.to_numeric(column, errors="coerce") for column in (prediction, label)]
    if all(n.notna().all() for n in numbers):
        return numbers[0].to_numpy(dtype=float) == numbers[1].to_numpy(dtype=float)
    return prediction.astype(str).to_numpy() == label.astype(str).to_numpy()


def _first_id(table: pd.DataFrame, mask: pd.Series) -> str:
    rows = table.loc[mask.to_numpy()]
    return str(rows[EXAMPLE_ID].iloc[0]) if EXAMPLE_ID in rows.columns else str(rows.index[0])


def parse_score(text: str | ScoreSpec) -> ScoreSpec:
    """Parse ``mean[:col]``, ``accuracy[:prediction,label]`` or ``ratio:num,base,ref``."""
    if isinstance(text, ScoreSpec):
        return text
    kind, _, rest = str(text).partition(":")
    columns = tuple(c.strip() for c in rest.split(",")) if rest else ()
    expected = {"mean": 1, "accuracy": 2, "ratio": 3}
    if kind not in expected:
        raise SeedscopeError(f"unknown score '{text}': use mean[:column], accuracy[:prediction,label] or ratio:num,base,ref")
    if not columns and kind == "ratio":
        raise SeedscopeError("a ratio score names its three columns: ratio:num,base,ref, e.g. ratio:circuit,empty,model")
    columns = columns or {"mean": (SCORE,), "accuracy": ("prediction", "label")}[kind]
    if len(columns) != expected[kind] or not all(columns):
        raise SeedscopeError(f"score '{text}' needs {expected[kind]} column name(s) after '{kind}:'")
    return ScoreSpec(kind, columns)


@dataclass(frozen=True)
class ScorePool:
    """M systems scored on the same N examples: ``values`` is M × N × C (C value columns)."""

    systems: list[str]
    example_ids: np.ndarray
    values: np.ndarray
    spec: ScoreSpec

    @property
    def n_examples(self) -> int:
        return len(self.example_ids)

    def theta(self, means: np.ndarray) -> np.ndarray:
        return self.spec.combine(means)


def score_pool(table: pd.DataFrame, score: str | ScoreSpec = "mean", source: str = "scores") -> ScorePool:
    """Check a long score table (``system``, ``example_id``, value columns) and make it dense.

    Every system must cover exactly the same example ids, once each, with finite scores.
    """
    spec = parse_score(score)
    for column in (SYSTEM, EXAMPLE_ID):
        if column not in table.columns:
            raise SeedscopeError(f"{source}: missing column {column}; found {', '.join(map(str, table.columns))}")
    if table.empty:
        raise SeedscopeError(f"{source}: no rows")
    system_codes, systems = pd.factorize(table[SYSTEM].astype(str))
    example_codes, ids = pd.factorize(table[EXAMPLE_ID].astype(str))
    systems = list(systems)
    counts = np.bincount(system_codes.astype(np.int64) * len(ids) + example_codes,
                         minlength=len(systems) * len(ids)).reshape(len(systems), len(ids))
    if counts.max() > 1:
        system, example = np.argwhere(counts > 1)[0]
        raise SeedscopeError(f"{source}: system {systems[system]} scores example {ids[example]} more than once")
    for index in range(1, len(systems)):
        lacking = sorted(ids[(counts[0] == 1) & (counts[index] == 0)])
        extra = sorted(ids[(counts[0] == 0) & (counts[index] == 1)])
        if lacking or extra:
            name = systems[index]
            detail = "; ".join(
                f"{what} {len(found)} (e.g. {', '.join(found[:3])})"
                for what, found in (("lacks", lacking), ("adds", extra))
                if found
            )
            raise SeedscopeError(
                f"systems are scored on different example ids: {name} vs {systems[0]}: {name} {detail}"
            )
    order = np.asarray(ids.argsort())
    rank = np.empty(len(ids), dtype=np.int64)
    rank[order] = np.arange(len(ids))
    example_ids = np.asarray(ids[order], dtype=object)
    values_by_row = spec.values(table, source)
    values = np.empty((len(systems), len(example_ids), values_by_row.shape[1]))
    values[system_codes, rank[example_codes]] = values_by_row
    return ScorePool(systems, example_ids, values, spec)


def correctness_scores(predictions: Mapping[str, pd.DataFrame | AlignedRuns]) -> pd.DataFrame:
    """A long score table (system, example_id, score) from each system's prediction table (or aligned runs).

    score = the share of the system's runs that get the example right (0/1 for one run), so θ
    = mean score on a subset is the system's accuracy there, averaged over its seeds. Needs
    gold labels and class predictions of one task.
    """
    frames, systems = [], {}
    for name, table in predictions.items():
        task = None
        if isinstance(table, AlignedRuns):
            aligned = table
        elif "task" in table.columns and table["task"].nunique() > 1:
            tasks = ", ".join(map(str, table["task"].unique()[:5]))
            raise SeedscopeError(f"system {name} holds several tasks ({tasks}); pick one with --task")
        else:
            task = table["task"].iloc[0] if "task" in table.columns and len(table) else None
            try:
                aligned = align_runs(table.drop(columns=[c for c in ("task", "model") if c in table.columns]))
            except SeedscopeError as error:
                raise SeedscopeError(f"system {name}: {error}") from None
        systems[name] = aligned, task
        if aligned.task_type != "classification" or not aligned.has_labels or (aligned.labels < 0).any():
            raise SeedscopeError(
                f"system {name}: per-example correctness needs class predictions with a gold label for every example; "
                "for other scores pass per-example score files (--subset-score mean:COLUMN)"
            )
        correct = (aligned.predictions == aligned.labels[None, :]).mean(axis=0)
        frames.append(pd.DataFrame({SYSTEM: name, EXAMPLE_ID: aligned.example_ids, SCORE: correct}))
    if len(systems) > 1:
        check_one_task(systems)
    return pd.concat(frames, ignore_index=True)
