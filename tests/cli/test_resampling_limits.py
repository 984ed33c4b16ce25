"""One resampling limit in every command: a count that would exhaust memory or time is refused at once."""

from __future__ import annotations

import time
from pathlib import Path

import pandas as pd
import pytest

from seedscope.cli import main
from seedscope.metrics.resampling import MAX_RESAMPLES

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "rte"
HUGE = "1000000000"


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("scores")
    for name, shift in (("a", 0.0), ("b", 0.1)):
        pd.DataFrame({"example_id": range(50), "score": [(i % 7) / 7 + shift for i in range(50)]}).to_csv(
            folder / f"{name}.csv", index=False)
    for name, seeds in (("sweep_a", (42, 52)), ("sweep_b", (62, 72))):  # two sweeps of two seeds each
        pd.concat([pd.read_csv(EXAMPLES / f"seed_{seed}.csv").assign(run=seed) for seed in seeds]).to_csv(
            folder / f"{name}.csv", index=False)
    return folder


@pytest.mark.parametrize("command", [
    lambda ex, sc, fr: ["analyze", *map(str, sorted(ex.glob("*.csv"))), "--n-boot", HUGE],
    lambda ex, sc, fr: ["compare", str(sc / "sweep_a.csv"), str(sc / "sweep_b.csv"), "--n-boot", HUGE],
    lambda ex, sc, fr: ["compare", str(sc / "sweep_a.csv"), str(sc / "sweep_b.csv"), "--n-permutations", HUGE],
    lambda ex, sc, fr: ["factors", "analyze", str(fr), "--n-boot", HUGE],
    lambda ex, sc, fr: ["subsets", str(sc / "a.csv"), str(sc / "b.csv"), "--subset-size", "10", "--n-boot", HUGE],
    lambda ex, sc, fr: ["subsets", str(sc / "a.csv"), str(sc / "b.csv"), "--subset-size", "10",
                        "--n-permutations", HUGE],
], ids=["analyze", "compare-boot", "compare-permutations", "factors", "subsets-boot", "subsets-permutations"])
def test_an_unbounded_resampling_count_is_refused(command, scores, data_dir, capsys):
    started = time.perf_counter()
    with pytest.raises(SystemExit) as exit_info:
        main(command(EXAMPLES, scores, data_dir / "factor-runs" / "sst2_bert.csv"))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert f"{MAX_RESAMPLES:,} at most" in err and "Traceback" not in err
    assert time.perf_counter() - started < 20
