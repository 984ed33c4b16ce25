"""The implementation section as printed: floors not measured as —, rounding-level shifts visible, generated answers'
columns, and the notes of flagged pairs."""

from __future__ import annotations

import numpy as np
import pandas as pd

from seedscope.analysis.implementation import ImplementationStudy
from seedscope.report.implementation import PAIRS_TITLE, RANKING_TITLE, bug_notes, implementation_sections
from seedscope.report.tables import to_markdown


def pair(**values) -> dict:
    """One pair of the one-seed shape (lm-eval #2498: 0.30 at batch 1, 0.13 at batch 128), flagged."""
    return {"task": "gsm8k", "system": "lm", "a": "impl-b1", "b": "impl-b128", "setting": "batch_size", "n_seeds": 1,
            "n_examples": 100, "flip_rate": 0.17, "flips": 17, "flipped": ["3", "9"], "metric": "accuracy",
            "metric_a": 0.30, "metric_b": 0.13, "metric_diff": 0.17, "metric_diff_low": 0.09, "metric_diff_high": 0.25,
            "max_abs_logprob_diff": 1.42e-5, "mean_abs_logprob_diff": 4.1e-6, "max_abs_prob_diff": 4e-6,
            "null_flip_rate": np.nan, "null_metric_diff": np.nan, "null_reruns": 0, "seed_flip_rate": np.nan,
            "seed_std": np.nan, "probable_bug": True, **values}


def test_one_seed_pairs_show_unmeasured_floors_as_dashes_and_small_shifts_as_they_are():
    study = ImplementationStudy(pd.DataFrame([pair()]))
    sections = implementation_sections(study)
    row = sections[PAIRS_TITLE].iloc[0]
    assert row["max |Δ log p|"] == "1.42e-05" and row["mean |Δ log p|"] == "4.1e-06"  # not 0.0000
    assert "first diverging word (median)" not in sections[PAIRS_TITLE].columns  # scored, not generated
    line = to_markdown(sections[PAIRS_TITLE]).splitlines()[-1]
    assert line.endswith("| — | — | — | YES |")  # null flip rate, seed flip rate, seed std
    seed = sections[RANKING_TITLE].xs("seed", level="setting").iloc[0]
    assert seed[["pairs", "flip rate"]].isna().all()


def test_generated_answers_add_their_columns_before_the_accuracy():
    study = ImplementationStudy(pd.DataFrame([pair(answers_differ=0.25, median_first_diverging_word=2.0)]))
    columns = list(implementation_sections(study)[PAIRS_TITLE].columns)
    at = columns.index("answers differ")
    assert columns[at:at + 3] == ["answers differ", "first diverging word (median)", "Δ accuracy"]


def test_a_flag_of_one_seed_does_not_invent_the_seed_flip_rate():
    (note,) = bug_notes(ImplementationStudy(pd.DataFrame([pair()])))
    assert note == ("probable bug: lm on gsm8k, impl-b1 vs impl-b128: accuracy 0.3000 vs 0.1300, 17.0% of predictions "
                    "flip (seed: not measured with one seed); flipped examples: 3, 9")
    (note,) = bug_notes(ImplementationStudy(pd.DataFrame([pair(seed_flip_rate=0.05)])))
    assert "17.0% of predictions flip (seed: 5.0%)" in note
