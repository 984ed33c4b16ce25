"""read_samples: the sample table of every format that holds sampled generations, and its shared rules."""

from __future__ import annotations

import json
import warnings
import zipfile
from pathlib import Path

import pytest

from seedscope.errors import IgnoredOptionWarning, SeedscopeError, UnevenSamplesWarning
from seedscope.io import SAMPLE_READERS, read_samples
from seedscope.io.validate import zip_members
from seedscope.samples import REQUIRED_COLUMNS

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SAMPLED = FIXTURES / "inspect_ai" / "sampled-arith.eval"
LM_EVAL = FIXTURES / "lm_eval_repeats" / "seed1"


def drop_summaries(source: Path, target: Path, keep) -> Path:
    """``source`` with only the summaries ``keep`` accepts (every other member as inspect_ai wrote it)."""
    records = [r for r in json.loads(zip_members(source)["summaries.json"]) if keep(r)]
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        for name in old.namelist():
            new.writestr(name, json.dumps(records) if name == "summaries.json" else zip_members(source)[name])
    return target


def test_every_reader_returns_a_checked_sample_table_sorted_by_run_example_and_sample():
    assert set(SAMPLE_READERS) == {"inspect", "lighteval", "lm-eval"}
    for path, options in ((SAMPLED, {}), (LM_EVAL, {"task": "sst2_sampled_regex"})):
        table = read_samples(path, **options)
        assert set(REQUIRED_COLUMNS) <= set(table.columns) and set(table["correct"]) <= {0.0, 1.0}
        assert table[["run", "example_id", "sample"]].equals(
            table[["run", "example_id", "sample"]].sort_values(["run", "example_id", "sample"]).reset_index(drop=True))


def test_items_with_fewer_samples_are_kept_with_a_typed_note(tmp_path):
    short = drop_summaries(SAMPLED, tmp_path / "short.eval", lambda r: not (r["id"] in (1, 6) and r["epoch"] > 2))
    with pytest.warns(UnevenSamplesWarning, match=r"different numbers of samples \(2 to 4; 2 of 8 hold fewer than 4, "
                                                   r"e\.g\. example '1' of run 'short' with 2\)"):
        table = read_samples(short)
    assert table.groupby("example_id").size().to_dict() == {"0": 4, "1": 2, "2": 4, "3": 4, "4": 4, "5": 4, "6": 2, "7": 4}
    assert any("estimators are computed per item" in note for note in table.attrs["notes"])


def test_equal_counts_say_nothing():
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnevenSamplesWarning)
        read_samples(SAMPLED)


def test_formats_without_samples_and_options_that_do_not_apply(tmp_path):
    table = tmp_path / "seed1.csv"
    table.write_text("id,prediction,label\n0,1,1\n")
    with pytest.raises(SeedscopeError, match=r"seed1.csv is csv, which holds one answer per example; sampled "
                                             r"generations are read from inspect, lighteval, lm-eval files"):
        read_samples(table)
    with pytest.warns(IgnoredOptionWarning, match=r"--epochs-as is for inspect_ai logs; lm-eval files have no epochs"):
        read_samples(LM_EVAL, task="sst2_sampled_regex", epochs_as="runs")
    with pytest.raises(SeedscopeError, match=r"no input given"):
        read_samples([])
    with pytest.raises(SeedscopeError, match=r"missing\.eval does not exist"):
        read_samples(tmp_path / "missing.eval")


def test_a_log_that_is_not_an_archive_is_one_clear_error(tmp_path):
    damaged = tmp_path / "damaged.eval"
    damaged.write_bytes(SAMPLED.read_bytes()[: SAMPLED.stat().st_size // 2])
    with pytest.raises(SeedscopeError, match=r"damaged\.eval"):
        read_samples(damaged)


def test_analyze_epochs_as_samples_is_the_sample_analysis(cli):
    code, out, err = cli(["analyze", str(SAMPLED), "--epochs-as", "samples"])
    assert code == 0 and "pass@4" in out and "Traceback" not in err
    code, out, err = cli(["analyze", str(SAMPLED), "--epochs-as", "seeds"])
    assert code == 2 and "seeds" in err
