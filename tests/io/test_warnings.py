"""Each reader's notes are warnings of the right class, on real files: a Python user can filter them, turn them into
errors or silence them, and the texts stay in ``notes`` / ``attrs["notes"]`` for the command line."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from seedscope.errors import (DuplicateRowsWarning, IgnoredOptionWarning, ReadingChoiceWarning, RescaledValuesWarning,
                              SeedscopeError, SeedscopeWarning)
from seedscope.io import read_predictions, read_run_scores

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _classes(call) -> dict[type, list[str]]:
    """What ``call()`` warned, by class."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    found: dict[type, list[str]] = {}
    for warning in caught:
        found.setdefault(warning.category, []).append(str(warning.message))
    return found


def test_duplicate_rows_can_be_an_error_or_silenced(tmp_path):
    path = _write(tmp_path / "s.csv", "seed,acc\n1,0.8\n2,0.82\n2,0.82\n")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DuplicateRowsWarning)
        with pytest.raises(DuplicateRowsWarning, match=r"dropped 1 exact duplicate row\(s\) \(s.csv line 4\)"):
            read_run_scores(path)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("ignore", DuplicateRowsWarning)
        scores = read_run_scores(path)
    assert scores.table["acc"].tolist() == [0.8, 0.82] and caught == [] and scores.notes == []
    with pytest.warns(DuplicateRowsWarning):
        assert any("exact duplicate" in note for note in read_run_scores(path).notes)


def test_score_table_notes_by_class(tmp_path):
    percent = _write(tmp_path / "p.csv", "model,seed,acc\nA,1,85.3%\nA,2,86.1%\nB,1,80%\nB,2,81%\nMean,,85%\n")
    found = _classes(lambda: read_run_scores(percent))
    assert any("was read as percentages" in n for n in found[RescaledValuesWarning])
    assert any("skipped summary row(s) Mean" in n for n in found[ReadingChoiceWarning])
    assert any("systems told apart by model" in n for n in found[ReadingChoiceWarning])
    rates = _write(tmp_path / "r.csv", "seed,accuracy\n1,85.3\n2,86.1\n")
    with pytest.raises(SeedscopeError, match=r"r.csv line 2: accuracy 85.3 is outside \[0, 1\]"):
        read_run_scores(rates)  # a bounded metric out of its range is refused, unless --scale makes it fit
    scaled = _classes(lambda: read_run_scores(rates, scale=0.01))
    assert scaled == {RescaledValuesWarning: ["every score was multiplied by 0.01 (--scale)"]}
    european = _write(tmp_path / "eu.csv", "seed;acc\n1;0,853\n2;0,861\n")
    assert any("',' as the decimal mark" in n for n in _classes(lambda: read_run_scores(european))[ReadingChoiceWarning])


def test_reader_choices_are_reading_choice_warnings():
    inspect = _classes(lambda: read_predictions(FIXTURES / "inspect_ai" / "sst2-mock.eval"))
    assert [n for n in inspect[ReadingChoiceWarning] if "scorer match of match, answer_length" in n]
    helm = _classes(lambda: read_predictions(FIXTURES / "helm" / "simple_mcqa-smollm2"))
    assert [n for n in helm[ReadingChoiceWarning] if "per-instance stat" in n]
    lighteval = _classes(lambda: read_predictions(FIXTURES / "lighteval" / "details"))
    assert [n for n in lighteval[ReadingChoiceWarning] if n.startswith("lighteval details")]


def test_an_option_that_does_not_apply_is_an_ignored_option_warning(tmp_path):
    path = _write(tmp_path / "seed1.csv", "example_id,prediction,label\n0,1,1\n1,0,1\n")
    with pytest.warns(IgnoredOptionWarning, match="--metric picks an inspect_ai scorer"):
        table = read_predictions([path], metric="acc")
    assert table.attrs["notes"] == [
        "--metric picks an inspect_ai scorer, a HELM stat or a score table's column; csv predictions have neither, so it "
        "is ignored"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SeedscopeWarning)
        assert read_predictions([path], metric="acc").attrs["notes"] == []


def test_the_lm_eval_filter_used_is_a_reading_choice(lm, tmp_path):
    records = [lm.generation(1, "18", 18), lm.generation(1, "18", 18, filter="flexible-extract")]
    path = lm.jsonl(tmp_path / f"samples_gsm8k_{lm.stamp}.jsonl", records)
    with pytest.warns(ReadingChoiceWarning, match="lm-eval task gsm8k: filters strict-match, flexible-extract"):
        read_predictions([path])
