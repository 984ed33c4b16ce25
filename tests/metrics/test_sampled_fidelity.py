"""The sampling estimators equal, to 1e-9, what inspect_ai's epoch reducers and lighteval's PassAtK / GPassAtK compute.

``fixtures/inspect-epochs.eval`` is a log inspect_ai wrote (``--epochs 4``, its reducers pass_at_1 …
pass_at_4, pass_k_2, pass_k_3, at_least_2, at_least_3, max, mean; ``make_inspect_epochs.py``);
``fixtures/sampled-pools.json`` holds fixed random pools (n = 4 … 300) with the values inspect_ai's
reducers and lighteval's own methods gave (``make_sampled_pools.py``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from seedscope.analysis.sampling import analyze_samples
from seedscope.io.validate import zip_members
from seedscope.metrics import sampled

FIXTURES = Path(__file__).parent / "fixtures"
#: inspect_ai's value_to_float of match's values (its max reducer keeps the letter)
VALUE = {"C": 1.0, "I": 0.0}
TOLERANCE = 1e-9


def inspect_log() -> tuple[pd.DataFrame, dict, dict]:
    """(the log's epochs as a sample table, reducer → sample id → value, reducer → (accuracy, stderr) over items)."""
    members = zip_members(FIXTURES / "inspect-epochs.eval", "an inspect_ai .eval archive")
    summaries = json.loads(members["summaries.json"])
    table = pd.DataFrame({"run": "inspect", "example_id": [s["id"] for s in summaries],
                          "sample": [s["epoch"] for s in summaries],
                          "correct": [float(s["scores"]["match"]["value"] == "C") for s in summaries],
                          "prediction": [s["scores"]["match"]["answer"] for s in summaries]})
    reductions = {r["reducer"]: {s["sample_id"]: VALUE.get(s["value"], s["value"]) for s in r["samples"]}
                  for r in json.loads(members["reductions.json"])}
    results = {s["reducer"]: (s["metrics"]["accuracy"]["value"], s["metrics"]["stderr"]["value"])
               for s in json.loads(members["header.json"])["results"]["scores"]}
    return table, reductions, results


#: inspect_ai's reducer → seedscope's estimator over n = 4 epochs
INSPECT_NAMES = {"pass_at_1": "pass@1", "pass_at_2": "pass@2", "pass_at_3": "pass@3", "pass_at_4": "pass@4",
                 "pass_k_2": "pass^2", "pass_k_3": "pass^3", "at_least_2": "G-Pass@4_0.5",
                 "at_least_3": "G-Pass@4_0.75", "max": "pass@4", "mean": "avg@n"}


def test_the_inspect_log_disagrees_across_epochs():
    table, _, _ = inspect_log()
    per_item = table.groupby("example_id")["correct"].agg(["size", "sum"])
    assert (per_item["size"] == 4).all() and ((per_item["sum"] > 0) & (per_item["sum"] < 4)).sum() >= 5


@pytest.mark.parametrize("reducer", sorted(INSPECT_NAMES))
def test_inspect_reducers_on_a_real_epochs_log(reducer):
    table, reductions, results = inspect_log()
    result = analyze_samples(table, k=[1, 2, 3, 4], thresholds=[0.5, 0.75], n_boot=100)
    ours = result.per_item[INSPECT_NAMES[reducer]].droplevel("run").rename(index=str)
    theirs = pd.Series(reductions[reducer]).rename(index=str)
    assert len(theirs) == 16
    pd.testing.assert_series_equal(ours.loc[theirs.index], theirs.astype(float), check_names=False, atol=TOLERANCE,
                                   rtol=0)
    accuracy, stderr = results[reducer]  # inspect_ai's accuracy and stderr metrics over the reduced items
    assert result.per_run[INSPECT_NAMES[reducer]].iloc[0] == pytest.approx(accuracy, abs=TOLERANCE)
    assert result.errors.loc[INSPECT_NAMES[reducer], "se"] == pytest.approx(stderr, abs=TOLERANCE)


def pools():
    for pool in json.loads((FIXTURES / "sampled-pools.json").read_text())["pools"]:
        for scores, values in zip(pool["scores"], pool["items"]):
            yield pool, scores, values


def test_the_pools_cover_small_and_large_n():
    assert {pool["n"] for pool, _, _ in pools()} == {4, 10, 16, 64, 300}


@pytest.mark.parametrize("n", [4, 10, 16, 64, 300])
def test_inspect_and_lighteval_on_the_same_pools(n):
    checked = 0
    for pool, scores, values in pools():
        if pool["n"] != n:
            continue
        count, right = [len(scores)], [sum(scores)]
        assert sampled.avg_at_n(count, right)[0] == pytest.approx(values["inspect"]["mean"], abs=TOLERANCE)
        assert sampled.pass_at_k(count, right, n)[0] == pytest.approx(values["inspect"]["max"], abs=TOLERANCE)
        for k in pool["ks"]:
            inspect, lighteval = values["inspect"][str(k)], values["lighteval"][str(k)]
            assert sampled.pass_at_k(count, right, k)[0] == pytest.approx(inspect["pass_at"], abs=TOLERANCE)
            assert sampled.pass_at_k(count, right, k)[0] == pytest.approx(lighteval["pass@k"], abs=TOLERANCE)
            assert sampled.pass_hat_k(count, right, k)[0] == pytest.approx(inspect["pass_k"], abs=TOLERANCE)
            # inspect_ai's at_least(k) over all n epochs is G-Pass@n at τ = k/n
            assert sampled.g_pass_at_k(count, right, n, k / n)[0] == pytest.approx(inspect["at_least"], abs=TOLERANCE)
            for tau in pool["thresholds"]:
                assert sampled.g_pass_at_k(count, right, k, tau)[0] == pytest.approx(
                    lighteval[f"g-pass@{k}_{tau}"], abs=TOLERANCE)
            assert sampled.mg_pass_at_k(count, right, k)[0] == pytest.approx(lighteval[f"mg-pass@{k}"], abs=TOLERANCE)
            checked += 1
    assert checked >= 24
