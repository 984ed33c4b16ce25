"""Measures between implementations: hand-worked values, a slow reference on random cases, and the bug rule on a
planted defect."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SkippedEstimateWarning
from seedscope.analysis.implementation import (
    as_implementations,
    compare_implementations,
    differing_setting,
    first_diverging_word,
    pair_measures,
    seed_floor,
)


def runs(predictions: dict, labels: list, probs: dict | None = None, model: str = "lm-impl-fp32") -> pd.DataFrame:
    """A long table: ``predictions[seed]`` over examples e0…, with ``prob_pos`` from ``probs[seed]``."""
    frames = []
    for seed, predicted in predictions.items():
        frame = pd.DataFrame({"task": "sst2", "model": model, "run": str(seed),
                              "example_id": [f"e{i}" for i in range(len(labels))], "prediction": predicted,
                              "label": labels})
        if probs is not None:
            frame["prob_pos"] = probs[seed]
            frame["prob_neg"] = 1 - np.asarray(probs[seed])
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_hand_worked_pair():
    labels = ["pos", "neg", "pos", "neg"]
    a = runs({1: ["pos", "neg", "neg", "neg"]}, labels, {1: [0.9, 0.2, 0.4, 0.1]})
    b = runs({1: ["pos", "pos", "neg", "neg"]}, labels, {1: [0.9, 0.6, 0.4, 0.1]})
    m = pair_measures(a, b, n_boot=200)
    assert m["flip_rate"] == 0.25 and m["flipped"] == ["e1"]
    assert m["metric_a"] == 0.75 and m["metric_b"] == 0.5 and m["metric_diff"] == 0.25
    # e1: |log .6 − log .2| = log 3 for pos, |log .4 − log .8| = log 2 for neg → log 3 worst; others 0
    assert m["max_abs_logprob_diff"] == pytest.approx(np.log(3))
    assert m["mean_abs_logprob_diff"] == pytest.approx(np.log(3) / 4)
    assert m["max_abs_prob_diff"] == pytest.approx(0.4)


def test_first_diverging_word_and_setting_names():
    assert first_diverging_word("the answer is 4", "the answer is 5") == 3
    assert first_diverging_word("yes", "yes") is None and first_diverging_word("", "no") == 0
    assert differing_setting("impl-fp32-b1", "impl-fp32-b16") == "batch_size"
    assert differing_setting("impl-fp32-b1-r1", "impl-fp32-b1-r2") == "rerun"
    assert differing_setting("impl-fp32-b1", "impl-bf16-b16") == "several"


def slow_pair(a: pd.DataFrame, b: pd.DataFrame) -> tuple[float, float, float]:
    """Flip rate, accuracy difference and max |Δ log p| by loops over (seed, example)."""
    flips, worst, accuracy = [], 0.0, {}
    rows_b = {(r.run, r.example_id): r for r in b.itertuples()}
    for r in a.itertuples():
        s = rows_b[(r.run, r.example_id)]
        flips.append(r.prediction != s.prediction)
        worst = max(worst, abs(np.log(r.prob_pos) - np.log(s.prob_pos)), abs(np.log(r.prob_neg) - np.log(s.prob_neg)))
        accuracy.setdefault(r.run, []).append((r.prediction == r.label) - (s.prediction == s.label))
    return float(np.mean(flips)), float(np.mean([np.mean(v) for v in accuracy.values()])), worst


@pytest.mark.parametrize("case", range(5))
def test_pair_measures_match_a_slow_reference(case):
    rng = np.random.default_rng(case)
    n, seeds = 30, [1, 2, 3]
    labels = list(rng.choice(["pos", "neg"], n))
    pa = {s: rng.uniform(0.05, 0.95, n) for s in seeds}
    pb = {s: np.clip(pa[s] + rng.normal(0, 0.1, n), 0.01, 0.99) for s in seeds}
    a = runs({s: np.where(pa[s] > 0.5, "pos", "neg") for s in seeds}, labels, pa)
    b = runs({s: np.where(pb[s] > 0.5, "pos", "neg") for s in seeds}, labels, pb)
    m = pair_measures(a, b, n_boot=200)
    flip, diff, worst = slow_pair(a, b)
    assert m["flip_rate"] == pytest.approx(flip) and m["metric_diff"] == pytest.approx(diff)
    assert m["max_abs_logprob_diff"] == pytest.approx(worst)
    assert m["metric_diff_low"] <= m["metric_diff"] <= m["metric_diff_high"]
    floor = seed_floor(a)
    pairs = [(np.asarray(a[a.run == str(x)].prediction) != np.asarray(a[a.run == str(y)].prediction)).mean()
             for x, y in itertools.combinations(seeds, 2)]
    assert floor["seed_flip_rate"] == pytest.approx(np.mean(pairs))


def study_table(defect: bool, rng_seed: int = 0) -> pd.DataFrame:
    """Two implementations (batch 1, batch 16) and a rerun of batch 1, five seeds of 200 examples, where the seed
    moves demonstrations (large flips) and batch 16 rounds differently (a few near-ties flip) — or, with ``defect``,
    drops the last token of padded rows, which pushes most rows to one class."""
    rng = np.random.default_rng(rng_seed)
    n, seeds = 200, [1, 2, 3, 4, 5]
    labels = rng.choice(["pos", "neg"], n)
    signal = np.where(labels == "pos", 0.6, -0.6) + rng.normal(0, 0.5, n)
    tables = []
    for tag in ("impl-b1-r1", "impl-b1-r2", "impl-b16-r1"):
        probs = {}
        for s in seeds:
            logit = signal + np.random.default_rng(s).normal(0, 0.6, n)  # the seed's demonstrations
            if tag == "impl-b16-r1":
                logit = logit + rng.normal(0, 3e-2, n) - (2.5 if defect else 0.0) * (np.arange(n) % 16 != 0)
            probs[s] = 1 / (1 + np.exp(-logit))
        predictions = {s: np.where(p > 0.5, "pos", "neg") for s, p in probs.items()}
        tables.append(runs(predictions, list(labels), probs, model=f"lm-icl-{tag}"))
    return pd.concat(tables, ignore_index=True)


def test_the_rule_flags_a_planted_defect_and_nothing_else():
    clean = compare_implementations(study_table(defect=False), n_boot=500).pairs.set_index(["a", "b"])
    assert not clean["probable_bug"].any()
    rerun = clean.loc[("impl-b1-r1", "impl-b1-r2")]
    assert rerun["setting"] == "rerun" and rerun["flip_rate"] == 0 and rerun["max_abs_logprob_diff"] == 0
    batch = clean.loc[("impl-b1-r1", "impl-b16-r1")]
    assert batch["setting"] == "batch_size" and 0 < batch["flip_rate"] < batch["seed_flip_rate"]
    broken = compare_implementations(study_table(defect=True), n_boot=500)
    flagged = broken.pairs[broken.pairs["probable_bug"]]
    assert list(zip(flagged["a"], flagged["b"])) == [("impl-b1-r1", "impl-b16-r1")]  # r2 vs r1: not compared
    assert len(flagged["flipped"].iloc[0]) > 0
    ranking = broken.ranking()
    assert list(ranking["setting"])[0] == "batch_size" and "seed" in set(ranking["setting"])


def test_one_seed_flags_a_significant_shift_only():
    labels = ["pos"] * 100
    a = runs({1: ["pos"] * 30 + ["neg"] * 70}, labels, model="lm-impl-b1")
    b = runs({1: ["pos"] * 13 + ["neg"] * 87}, labels, model="lm-impl-b128")  # lm-eval #2498's shape
    with pytest.warns(SkippedEstimateWarning):
        study = compare_implementations(pd.concat([a, b]), n_boot=500)
    pair = study.pairs.iloc[0]
    assert pair["probable_bug"] and pair["metric_diff"] == pytest.approx(0.17) and pair["flip_rate"] == 0.17
    # unmeasured, not zero: the seed floor (one seed) and the null floor (no rerun); the rule takes the latter as zero
    assert pair[["seed_flip_rate", "seed_std", "null_flip_rate", "null_metric_diff"]].isna().all()
    assert study.to_dict()[0]["seed_flip_rate"] is None and study.to_dict()[0]["null_reruns"] == 0
    assert [note.split(" (")[0] for note in study.notes] == ["one seed per implementation", "no identical reruns"]
    seed = study.ranking().set_index("setting").loc["seed"]
    assert seed[["pairs", "flip_rate", "abs_metric_diff"]].isna().all()


def test_no_tags_no_study():
    assert compare_implementations(runs({1: ["pos"]}, ["pos"], model="lm")) is None


def test_sweeps_are_paired_seed_by_seed_or_run_to_run():
    """Two sweeps of seeds 1 and 2 pair by seed; two single-run files pair with each other whatever their names."""
    import pandas as pd

    from seedscope.analysis.implementation import compare_implementations, sweeps_as_implementations

    def sweep(runs, flip=False):
        return pd.DataFrame({"run": [r for r in runs for _ in range(4)], "example_id": list(range(4)) * len(runs),
                             "prediction": [1, 0, 1, 1] * len(runs) if not flip else [0, 0, 1, 1] * len(runs),
                             "label": [1, 0, 1, 0] * len(runs)})

    seeded = compare_implementations(sweeps_as_implementations({"b1": sweep(["1", "2"]), "b128": sweep(["1", "2"], True)}),
                                     n_boot=50).pairs.iloc[0]
    assert seeded["n_seeds"] == 2 and seeded["flip_rate"] == 0.25
    files = compare_implementations(sweeps_as_implementations({"b1": sweep(["out_b1"]), "b128": sweep(["out_b128"], True)}),
                                    n_boot=50).pairs.iloc[0]
    assert files["n_seeds"] == 1 and files["flip_rate"] == 0.25 and files["metric_diff"] == 0.25


def test_runs_that_name_their_implementation_keep_it_as_runs_of_implementations():
    """--runs-are-implementations on a sweep's --implementation runs: their tags and seeds stay (each run as an
    implementation of its own would mix the seeds into them); untagged runs each become one."""
    tagged = pd.concat([runs({1: ["pos"], 2: ["neg"]}, ["pos"], model=f"lm-icl-impl-{tag}") for tag in ("b1", "b16")])
    assert as_implementations(tagged) is tagged
    plain = as_implementations(runs({1: ["pos"], 2: ["neg"]}, ["pos"], model="lm"))
    assert sorted(plain["model"]) == ["lm-impl-1", "lm-impl-2"] and set(plain["run"]) == {"1"}
