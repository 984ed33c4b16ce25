"""Measures between implementations: how much a run's outputs move when only the way it is computed changes.

Runs of one system under two implementations (``impl-…`` tags, :mod:`seedscope.plan.implementation`)
are compared seed by seed on the same examples: the **flip rate** (share of (seed, example)
pairs whose prediction changes), the largest and mean |Δ log p| of the class probabilities
(and the largest |Δ p|), the first diverging word of generated answers, and the accuracy
difference with a percentile-bootstrap interval over examples.

Each effect is read against two floors. The **null floor** comes from identical reruns
(implementations that differ only in ``rerun``): zero where the kernels are deterministic. The
**seed floor** is what changing the seed does within one implementation: the mean flip rate
between two seeds and the sample standard deviation of the accuracy over seeds.

**The bug rule.** A pair is flagged as a *probable bug* when its accuracy difference is above the
null floor with an interval that excludes zero, and it is far outside the seed spread: it flips
more predictions than changing the seed does, or its accuracy difference exceeds three seed
standard deviations. With a single seed (no seed spread) the first part alone decides, and the seed
floor is left unmeasured (NaN, with a note), as is the null floor without reruns (the rule then
takes it as zero). A few flips on a small evaluation set (an interval that holds zero) are never
flagged. An implementation detail is meant to be a rounding-level change; one that moves results
more than the randomness under study is a defect until shown otherwise (lm-eval #2498: gsm8k 0.30
at batch 1, 0.13 at batch 128).
"""

from __future__ import annotations

import itertools
import re
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from seedscope.errors import SkippedEstimateWarning
from seedscope.metrics.resampling import interval
from seedscope.notes import recorded
from seedscope.plan.implementation import TAG_PREFIX, setting_of_part, split_tag
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, RUN, prob_columns

#: how many flipped example ids a pair lists
FLIPPED_LISTED = 10
#: the accuracy difference counts as far outside the seed spread beyond this many seed standard deviations
SEED_SPREADS = 3.0
#: how many (task, system) groups a note names before it counts the rest
NAMED = 5
#: the floors left unmeasured (NaN in the pairs, null in JSON) without a second seed or a rerun
UNMEASURED = ["null_flip_rate", "null_metric_diff", "seed_flip_rate", "seed_std"]
_RERUN = re.compile(r"-r\d+(?=-|$)")


def rerun_base(tag: str) -> str:
    """The tag without its rerun part: identical reruns share it."""
    return _RERUN.sub("", tag)


def differing_setting(a: str, b: str) -> str:
    """The setting two tags differ in (``batch_size``), ``several``, or ``rerun`` for identical reruns."""
    parts_a, parts_b = a[len(TAG_PREFIX):].split("-"), b[len(TAG_PREFIX):].split("-")
    if rerun_base(a) == rerun_base(b):
        return "rerun"
    if len(parts_a) != len(parts_b):
        return "several"
    changed = {setting_of_part(x) or x for x, y in zip(parts_a, parts_b) if x != y}
    return changed.pop() if len(changed) == 1 else "several"


def comparable(a: str, b: str) -> bool:
    """Two reruns of one implementation, or two implementations on the same rerun (not fp32 rerun 1 vs bf16 rerun 2)."""
    return rerun_base(a) == rerun_base(b) or _RERUN.findall(a) == _RERUN.findall(b)


def _log(probs: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.clip(probs, 1e-300, None))


def first_diverging_word(a: str, b: str) -> int | None:
    """The 0-based index of the first word where two answers differ (None when they are the same)."""
    words_a, words_b = str(a).split(), str(b).split()
    if words_a == words_b:
        return None
    same = 0
    while same < min(len(words_a), len(words_b)) and words_a[same] == words_b[same]:
        same += 1
    return same


def pair_measures(a: pd.DataFrame, b: pd.DataFrame, *, confidence: float = 0.95, n_boot: int = 2000,
                  seed: int = 0) -> dict:
    """The measures between two implementations' predictions (each a long table of ``run`` × ``example_id``)."""
    probs = [c for c in prob_columns(a) if c in b.columns]
    extra = ["answer"] if "answer" in a and "answer" in b else []
    keep = [RUN, EXAMPLE_ID, PREDICTION, LABEL, *probs, *extra]
    both = a[keep].merge(b[keep], on=[RUN, EXAMPLE_ID], suffixes=("_a", "_b"))
    flips = both[f"{PREDICTION}_a"].astype(str) != both[f"{PREDICTION}_b"].astype(str)
    correct = [(both[f"{PREDICTION}_{s}"].astype(str) == both[f"{LABEL}_{s}"].astype(str)).astype(float) for s in "ab"]
    by_run = pd.DataFrame({"a": correct[0], "b": correct[1], RUN: both[RUN]}).groupby(RUN)[["a", "b"]].mean()
    per_example = (correct[0] - correct[1]).groupby(both[EXAMPLE_ID]).mean().to_numpy()
    low, high = interval(None, per_example, of_means=True, n_resamples=n_boot, confidence=confidence, seed=seed)
    out = {
        "n_seeds": int(both[RUN].nunique()), "n_examples": int(both[EXAMPLE_ID].nunique()),
        "flip_rate": float(flips.mean()), "flips": int(flips.sum()),
        "flipped": both.loc[flips, EXAMPLE_ID].astype(str).drop_duplicates().head(FLIPPED_LISTED).tolist(),
        "metric": "accuracy", "metric_a": float(by_run["a"].mean()), "metric_b": float(by_run["b"].mean()),
        "metric_diff": float((by_run["a"] - by_run["b"]).mean()), "metric_diff_low": float(np.squeeze(low)),
        "metric_diff_high": float(np.squeeze(high)),
        "max_abs_logprob_diff": None, "mean_abs_logprob_diff": None, "max_abs_prob_diff": None,
    }
    if probs:
        pa, pb = both[[f"{c}_a" for c in probs]].to_numpy(float), both[[f"{c}_b" for c in probs]].to_numpy(float)
        worst = np.abs(_log(pa) - _log(pb)).max(axis=1)  # per (seed, example): the class that moved most
        out.update(max_abs_logprob_diff=float(worst.max()), mean_abs_logprob_diff=float(worst.mean()),
                   max_abs_prob_diff=float(np.abs(pa - pb).max()))
    if extra:
        firsts = [first_diverging_word(x, y) for x, y in zip(both["answer_a"], both["answer_b"])]
        diverged = [f for f in firsts if f is not None]
        out.update(answers_differ=len(diverged) / len(firsts) if firsts else 0.0,
                   median_first_diverging_word=float(np.median(diverged)) if diverged else None)
    return out


def seed_floor(runs: pd.DataFrame) -> dict:
    """Within one implementation: the mean flip rate between two seeds and the accuracy's sample std over seeds."""
    wide = runs.pivot_table(index=EXAMPLE_ID, columns=RUN, values=PREDICTION, aggfunc="first").astype(str)
    seeds = list(wide.columns)
    if len(seeds) < 2:
        return {"seed_flip_rate": None, "seed_std": None}
    flips = [float((wide[x] != wide[y]).mean()) for x, y in itertools.combinations(seeds, 2)]
    accuracy = (runs[PREDICTION].astype(str) == runs[LABEL].astype(str)).groupby(runs[RUN]).mean()
    return {"seed_flip_rate": float(np.mean(flips)), "seed_std": float(accuracy.std(ddof=1))}


def probable_bug(pair: dict, null: dict, floor: dict) -> bool:
    """The rule of the module's docstring: above the null floor (zero without reruns) and far outside the seed spread
    (the first part alone without a seed spread)."""
    above_null = pair["flip_rate"] > (null["null_flip_rate"] or 0.0) and \
        abs(pair["metric_diff"]) > (null["null_metric_diff"] or 0.0)
    excludes_zero = pair["metric_diff_low"] > 0 or pair["metric_diff_high"] < 0
    if not (above_null and excludes_zero):
        return False
    if floor["seed_flip_rate"] is None:
        return True
    more_flips = pair["flip_rate"] > floor["seed_flip_rate"]
    return bool(more_flips or abs(pair["metric_diff"]) > SEED_SPREADS * floor["seed_std"])


@dataclass
class ImplementationStudy:
    """Every pair of implementations of every (task, system), with the floors each was read against, and the notes
    on the floors that could not be measured."""

    pairs: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> list[dict]:
        return self.pairs.replace({np.nan: None}).to_dict(orient="records")

    def ranking(self) -> pd.DataFrame:
        """Each setting's mean flip rate and |accuracy difference| over the pairs that differ in it alone, beside the
        seed spread (in-context learning: the choice and order of demonstrations); the seed's row is NaN where each
        implementation ran one seed."""
        single = self.pairs[~self.pairs["setting"].isin(["several"])]
        table = single.assign(abs_metric_diff=single["metric_diff"].abs()).groupby(["task", "system", "setting"]).agg(
            pairs=("flip_rate", "size"), flip_rate=("flip_rate", "mean"), abs_metric_diff=("abs_metric_diff", "mean"),
            probable_bugs=("probable_bug", "sum")).reset_index()
        seeds = self.pairs.groupby(["task", "system"]).agg(flip_rate=("seed_flip_rate", "mean"),
                                                           abs_metric_diff=("seed_std", "mean")).reset_index()
        seeds = seeds.assign(setting="seed", pairs=None, probable_bugs=0)
        ranked = pd.concat([table, seeds], ignore_index=True)
        return ranked.sort_values(["task", "system", "flip_rate"], ascending=[True, True, False], ignore_index=True,
                                  na_position="last")


def as_implementations(table: pd.DataFrame) -> pd.DataFrame:
    """A table whose runs are implementations of one system (files made at two batch sizes): each run becomes the
    implementation ``impl-<run>`` of its model (one seed), so that :func:`compare_implementations` pairs them.

    Runs whose model already names its implementation (a sweep's ``--implementation`` runs) keep it and their seed:
    making each of them an implementation of its own would mix the seeds into the implementations."""
    if "model" in table.columns and table["model"].map(split_tag).str[1].notna().all():
        return table
    names = table[RUN].astype(str).str.replace(r"[^A-Za-z0-9.]+", "_", regex=True)
    model = table["model"].astype(str) + "-" if "model" in table.columns else ""
    return table.assign(model=model + TAG_PREFIX + names, **{RUN: "1"})


def sweeps_as_implementations(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """Sweeps of one system under different implementations (name → prediction table; its runs are seeds) as one
    table whose model labels name each sweep as an implementation, so that :func:`compare_implementations` pairs
    them seed by seed (``seedscope compare A B --implementations``); sweeps of one run each are paired run to run,
    whatever their runs are called (files named after their implementation)."""
    one_run_each = all(table[RUN].nunique() == 1 for table in tables.values())
    frames = []
    for name, table in tables.items():
        tag = TAG_PREFIX + "".join(ch if ch.isalnum() or ch == "." else "_" for ch in str(name))
        frames.append(table.assign(model=f"system-{tag}", **({RUN: "1"} if one_run_each else {})))
    return pd.concat(frames, ignore_index=True)


def compare_implementations(table: pd.DataFrame, *, confidence: float = 0.95, n_boot: int = 2000,
                            seed: int = 0) -> ImplementationStudy | None:
    """The implementation study of a long prediction table whose ``model`` labels carry ``impl-`` tags; None if none do.

    Runs of one implementation are matched by ``run`` (the seed) and ``example_id``.
    """
    if "model" not in table.columns:
        return None
    split = {label: split_tag(label) for label in pd.unique(table["model"])}  # per label, not per row
    tagged = table.assign(system=table["model"].map({label: parts[0] for label, parts in split.items()}),
                          implementation=table["model"].map({label: parts[1] for label, parts in split.items()}))
    tagged = tagged.dropna(subset=["implementation"])
    if "task" not in tagged.columns:
        tagged = tagged.assign(task=None)
    rows, one_seed, no_reruns = [], [], []
    for (task, system), group in tagged.groupby(["task", "system"], sort=False, dropna=False):
        by_impl = {tag: runs for tag, runs in group.groupby("implementation", sort=False)}
        if len(by_impl) < 2:
            continue
        floors = [seed_floor(runs) for runs in by_impl.values()]
        known = [f for f in floors if f["seed_flip_rate"] is not None]
        floor = {k: float(np.mean([f[k] for f in known])) if known else None for k in ("seed_flip_rate", "seed_std")}
        measured = {(x, y): pair_measures(by_impl[x], by_impl[y], confidence=confidence, n_boot=n_boot, seed=seed)
                    for x, y in itertools.combinations(by_impl, 2) if comparable(x, y)}
        reruns = [m for (x, y), m in measured.items() if differing_setting(x, y) == "rerun"]
        null = {"null_flip_rate": max((m["flip_rate"] for m in reruns), default=None),
                "null_metric_diff": max((abs(m["metric_diff"]) for m in reruns), default=None),
                "null_reruns": len(reruns)}
        label = " / ".join(part for part in (task, system) if isinstance(part, str) and part) or "the runs"
        one_seed += [label] if not known else []
        no_reruns += [label] if not reruns else []
        for (x, y), m in measured.items():
            setting = differing_setting(x, y)
            rows.append({"task": task, "system": system, "a": x, "b": y, "setting": setting, **m, **null, **floor,
                         "probable_bug": setting != "rerun" and probable_bug(m, null, floor)})
    if not rows:
        return None
    with recorded() as notes:
        _note_unmeasured(one_seed, no_reruns)
    pairs = pd.DataFrame(rows)
    return ImplementationStudy(pairs.astype({column: float for column in UNMEASURED}), notes)


def _named(labels: list[str]) -> str:
    more = f" and {len(labels) - NAMED} more" if len(labels) > NAMED else ""
    return ", ".join(labels[:NAMED]) + more


def _note_unmeasured(one_seed: list[str], no_reruns: list[str]) -> None:
    """Say which floors are left unmeasured (shown as —), and what the bug rule does without them."""
    if one_seed:
        warnings.warn(f"one seed per implementation ({_named(one_seed)}): the seed floor (seed flip rate, seed std) "
                      "needs two seeds or more and is not measured (—), so the bug rule's first part alone decides; "
                      "run two seeds or more to read the implementations against the seed",
                      SkippedEstimateWarning, stacklevel=3)
    if no_reruns:
        warnings.warn(f"no identical reruns ({_named(no_reruns)}): the null floor is not measured (—) and the bug "
                      "rule takes it as zero; --implementation rerun=1,2 measures it", SkippedEstimateWarning,
                      stacklevel=3)
