"""What a score may be: finite, sane, and within its metric's range."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.metrics.bounds import bound_of, check_score


@pytest.mark.parametrize("metric, bounds", [
    ("acc", (0.0, 1.0)), ("eval_accuracy", (0.0, 1.0)), ("test/f1_macro", (0.0, 1.0)), ("acc,none", (0.0, 1.0)),
    ("exact_match", (0.0, 1.0)), ("MCC", (-1.0, 1.0)), ("spearmanr", (-1.0, 1.0)), ("bleu", None), ("loss", None),
])
def test_bounds_by_name(metric, bounds):
    assert bound_of(metric) == bounds


@pytest.mark.parametrize("value, metric, message", [
    (1.5, "acc", r"acc 1.5 is outside \[0, 1\]"), (-0.7, "acc", r"acc -0.7 is outside \[0, 1\]"),
    (-1.2, "mcc", r"mcc -1.2 is outside \[-1, 1\]"), (float("inf"), "bleu", "bleu inf is not a plausible score"),
    (1e308, "loss", "loss 1e\\+308 is not a plausible score"), (float("nan"), "acc", "acc is NaN"),
])
def test_out_of_range_is_refused_naming_where(value, metric, message):
    with pytest.raises(SeedscopeError, match=rf"^s.csv line 3: {message}"):
        check_score(value, metric, "s.csv line 3")


def test_percentages_get_the_scale_hint_and_fitting_values_pass():
    with pytest.raises(SeedscopeError, match=r"pass --scale 0.01"):
        check_score(85, "acc", "s.csv line 2", scale_hint=True)
    assert check_score(0.85, "acc", "x") == 0.85 and check_score(-0.5, "mcc", "x") == -0.5
    assert check_score(37.2, "bleu", "x") == 37.2


def test_bounds_the_caller_knows_win_over_the_name():
    with pytest.raises(SeedscopeError, match=r"^f.csv line 6: score 1.7 is outside \[0, 1\], the range of these score"):
        check_score(1.7, "score", "f.csv line 6", bounds=(0.0, 1.0))
    assert check_score(1.7, "score", "x") == 1.7  # a score of unknown range
    assert check_score(0.7, "score", "x", bounds=(0.0, 1.0)) == 0.7
