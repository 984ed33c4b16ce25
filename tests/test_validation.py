"""One rule per statistical setting, the same message everywhere it comes in."""

from __future__ import annotations

import math

import pytest

from seedscope.analysis.compare import compare_systems
from seedscope.analysis.error_bars import minimum_detectable_difference
from seedscope.errors import SeedscopeError
from seedscope.validation import MAX_RESAMPLES, check_confidence, check_power, check_resamples, validate_params


@pytest.mark.parametrize("value", [0, 1, -0.5, 1.5, math.nan])
def test_probabilities_outside_the_open_interval_are_refused(value):
    with pytest.raises(SeedscopeError, match=f"^confidence must lie strictly between 0 and 1, not {value}$"):
        check_confidence(value)
    with pytest.raises(SeedscopeError, match=f"^power must lie strictly between 0 and 1, not {value}$"):
        check_power(value)
    with pytest.raises(SeedscopeError, match=r"^--power must lie strictly between 0 and 1 \(the chance of detecting"):
        check_power(value, "--power")


def test_accepted_values_come_back():
    assert check_confidence(0.9) == pytest.approx(0.05)
    assert check_power(0.8) == 0.8
    assert check_resamples(MAX_RESAMPLES) == MAX_RESAMPLES
    for bad, message in ((0, "at least 1, not 0"), (MAX_RESAMPLES + 1, "more than seedscope draws")):
        with pytest.raises(SeedscopeError, match=message):
            check_resamples(bad)


def test_every_caller_uses_the_one_rule():
    with pytest.raises(SeedscopeError, match="^power must lie strictly between 0 and 1, not 1.2$"):
        minimum_detectable_difference(1.0, 5, power=1.2)
    runs = {"a": [0.1, 0.2, 0.3], "b": [0.2, 0.3, 0.4]}
    with pytest.raises(SeedscopeError, match="^power must lie strictly between 0 and 1, not 0$"):
        compare_systems(runs, power=0)


def test_validate_params_checks_given_and_default_arguments_before_the_body():
    ran = []

    @validate_params(confidence=check_confidence, n_boot=check_resamples)
    def estimate(values, *, confidence=0.95, n_boot=0):
        ran.append(values)

    with pytest.raises(SeedscopeError, match="number of resamples must be at least 1, not 0"):
        estimate([1])
    with pytest.raises(SeedscopeError, match="confidence must lie"):
        estimate([1], confidence=2, n_boot=5)
    estimate([1], n_boot=5)
    assert ran == [[1]]
    with pytest.raises(TypeError, match="no parameter power"):
        validate_params(power=check_power)(lambda x: x)


def test_the_documented_example_runs():
    import doctest

    from seedscope import validation

    assert doctest.testmod(validation).failed == 0
