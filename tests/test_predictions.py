"""The prediction table's one label normaliser: every layer compares labels the same way."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.analysis.seed_effects import analyze
from seedscope.errors import SeedscopeError
from seedscope.predictions import (
    align_runs,
    label_key,
    normal_ids,
    probability_problem,
    text_order,
)
from seedscope.store.files import with_label_names


@pytest.mark.parametrize(
    ("value", "key"),
    [(True, "True"), (np.bool_(False), "False"), ("True", "True"), (1, "1"), (np.int64(1), "1"), (1.0, "1"),
     ("1", "1"), ("007", "007"), (0.5, "0.5"), ("entailment", "entailment")],
)
def test_label_key(value, key):
    assert label_key(value) == key


def test_json_booleans_and_csv_strings_are_one_class():
    """A run read from JSON (true/false) and one from a CSV of names ("True"/"False") agree completely."""
    bools = pd.DataFrame({"run": "json", "example_id": ["a", "b", "c"], "prediction": [True, False, True],
                          "label": [True, True, True]})
    names = bools.assign(run="csv", prediction=["True", "False", "True"], label="True")
    aligned = align_runs(pd.concat([bools, names], ignore_index=True))
    assert aligned.n_classes == 2
    result = analyze(pd.concat([bools, names], ignore_index=True), n_boot=10)
    assert result.micro.loc[0, "con"] == 1.0 and result.micro.loc[0, "ccon"] == pytest.approx(2 / 3)


def test_the_store_names_labels_with_the_same_key():
    """BoolQ's label names are "False" / "True": booleans, codes and names all map onto them."""
    table = pd.DataFrame({"run": "1", "example_id": ["a", "b", "c"], "prediction": [True, 0, "True"],
                          "label": [np.bool_(True), 1, "False"]})
    named = with_label_names(table, "boolq")
    assert named["prediction"].tolist() == ["True", "False", "True"]
    assert named["label"].tolist() == ["True", "True", "False"]


@pytest.mark.parametrize("rows, expected", [
    ([[0.3, 0.7], [0.5, 0.5]], None),
    ([[0.3, 0.7], [np.nan, 0.5]], (1, "probability prob_a is missing or not a number")),
    ([[-0.2, 1.2]], (0, "probability prob_a is -0.2, outside [0, 1]")),
    ([[0.5, np.inf]], (0, "probability prob_b is inf, outside [0, 1]")),
    ([[0.3, 0.7], [0.5, 0.7]], (1, "the probabilities (prob_a, prob_b) sum to 1.2000, not 1")),
    ([[0.3, 0.7005]], None),  # within the tolerance of rounding
])
def test_probability_problem_names_the_first_row_that_is_no_distribution(rows, expected):
    assert probability_problem(np.array(rows, dtype=float), ["prob_a", "prob_b"]) == expected


def test_align_runs_names_the_run_and_example_of_a_bad_probability():
    table = pd.DataFrame({"run": ["1", "1", "2", "2"], "example_id": ["a", "b", "a", "b"], "prediction": [0, 1, 0, 1],
                          "prob_0": [0.9, 0.2, 0.8, -0.1], "prob_1": [0.1, 0.8, 0.2, 1.1]})
    with pytest.raises(SeedscopeError, match=r"^t: run 2 example b: probability prob_0 is -0.1, outside \[0, 1\]$"):
        align_runs(table, source="t")


@pytest.mark.parametrize(
    ("ids", "expected"),
    [(pd.Series([7, 10, -3]), [7, 10, -3]), (pd.Series([7.0, 10.0]), [7, 10]), (pd.Series([7, 8], dtype="uint8"), [7, 8]),
     (pd.Series([7.0, 7.5]), ["7.0", "7.5"]), (pd.Series([7, "7"], dtype=object), ["7", "7"]),
     (pd.Series(["007", "8"]), ["007", "8"]), (pd.Series([True, False]), ["True", "False"]),
     (pd.Series([2.0 ** 60]), [str(2.0 ** 60)]), (pd.Series([2 ** 64 - 1], dtype="uint64"), [str(2 ** 64 - 1)])],
)
def test_ids_stay_numbers_only_when_every_one_is_a_whole_number_in_a_numeric_column(ids, expected):
    normal = normal_ids(ids)
    assert normal.tolist() == expected
    assert (normal.dtype == np.int64) == isinstance(expected[0], int)


def test_text_order_of_integers_is_the_order_of_their_text():
    """Against sorting the decimal text itself: signs, lengths (1 < 10 < 9) and the whole int64 range; ids in their
    numeric order (a few runs, which timsort merges) and shuffled (quicksort)."""
    rng = np.random.default_rng(0)
    bounds = np.array([np.iinfo(np.int64).min, np.iinfo(np.int64).max, 0, -1, 1, 9, 10, 99, 100], dtype=np.int64)
    in_order = np.arange(0, 300_000, 7)
    for ids in (rng.permutation(1000), rng.permutation(1000) * 37 - 5000, rng.integers(0, 10 ** 17, 500),
                rng.integers(-(2 ** 63), 2 ** 63 - 1, 500, dtype=np.int64), bounds, in_order, in_order[::-1],
                np.sort(rng.integers(0, 10 ** 18, 5000)), np.arange(-500, 50_000)):
        ids = np.asarray(ids, dtype=np.int64)
        expected = sorted(range(len(ids)), key=lambda i: str(ids[i]))
        assert text_order(ids).tolist() == expected
        assert ids[text_order(ids)].astype(str).tolist() == sorted(ids.astype(str).tolist())


def test_numeric_and_text_ids_align_to_the_same_examples_in_the_same_order():
    ids = np.random.default_rng(1).permutation(40) * 7
    table = pd.DataFrame({"run": np.repeat(["a", "b"], 40), "example_id": np.tile(ids, 2),
                          "prediction": np.arange(80) % 3, "label": np.tile(np.arange(40) % 3, 2)})
    numeric, text = align_runs(table), align_runs(table.astype({"example_id": str}))
    assert numeric.example_ids.dtype == np.int64 and text.example_ids.dtype == object
    assert numeric.example_ids.astype(str).tolist() == text.example_ids.tolist()
    np.testing.assert_array_equal(numeric.predictions, text.predictions)
    np.testing.assert_array_equal(numeric.labels, text.labels)
