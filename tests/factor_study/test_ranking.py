"""Ranking factors: IS(A) − IS(B) with an interval paired over the mitigation runs both factors share."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.factor_study.importance import FactorGrid, FactorStudy, analyze_factors
from seedscope.factor_study.ranking import importance_differences


def study(effect_a: float, effect_b: float, m: int = 30, n: int = 8, seed: int = 0) -> FactorStudy:
    """Additive effects: factor a moves scores by effect_a, b by effect_b, the rest by 0.02, in shared groups."""
    rng = np.random.default_rng(seed)
    rest = rng.normal(0, 0.02, (m, 1))
    grids = {name: FactorGrid(name, 0.7 + rest + rng.normal(0, effect, (m, n)))
             for name, effect in (("a", effect_a), ("b", effect_b))}
    golden = 0.7 + rng.normal(0, np.sqrt(0.02**2 + effect_a**2 + effect_b**2), 400)
    return FactorStudy(grids, golden)


def test_the_difference_is_the_two_importances_difference():
    s = study(0.03, 0.03)
    ranking = importance_differences(s, n_boot=2000)
    importance = analyze_factors(s, n_boot=200).summary["importance"]
    assert ranking.loc[("a", "b"), "difference"] == pytest.approx(importance["a"] - importance["b"])
    assert ranking.loc[("a", "b"), "n_shared_groups"] == 30


def test_a_clearly_more_important_factor_is_ranked_and_equal_ones_are_not():
    assert importance_differences(study(0.08, 0.005), n_boot=2000).loc[("a", "b"), "ranked"]
    equal = importance_differences(study(0.03, 0.03, seed=4), n_boot=2000).loc[("a", "b")]
    assert not equal["ranked"] and equal["ci_low"] < 0 < equal["ci_high"]


def test_the_interval_is_reproducible_and_covers_the_point():
    s = study(0.05, 0.02)
    first, again = importance_differences(s, seed=3), importance_differences(s, seed=3)
    pd.testing.assert_frame_equal(first, again)
    row = first.iloc[0]
    assert row["ci_low"] <= row["difference"] <= row["ci_high"]


def test_factors_analyze_prints_and_writes_the_ranking(tmp_path, cli):
    s = study(0.06, 0.01)
    rows = [{"experiment": f, "mitigation": j, f: k, "score": s.grids[f].scores[j - 1, k - 1]}
            for f in ("a", "b") for j in range(1, 31) for k in range(1, 9)]
    rows += [{"experiment": "golden", "mitigation": j, "score": v} for j, v in enumerate(s.golden, 1)]
    path = tmp_path / "scores.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    out = tmp_path / "r.json"
    code, printed, err = cli(["factors", "analyze", str(path), "--json", str(out), "--n-boot", "1000", "--details"])
    assert code == 0, err
    assert "Ranking: IS(A) − IS(B)" in printed and "a − b" in printed
    import json

    assert json.loads(out.read_text())["ranking"][0]["ranked"] is True
