"""The checks every statistical setting passes, written once (as scikit-learn's ``validate_params``).

A confidence level, a power and a resample count mean the same thing in every command and
function, so they are refused by the same rule with the same message, wherever they come in:
call a check directly, or declare the checked parameters of a function with
:func:`validate_params`, which runs the checks on the bound arguments before the body.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Callable

from seedscope.errors import SeedscopeError

#: the most resamples (bootstrap draws, permutations) any command makes: beyond it memory or time run out,
#: and the Monte-Carlo error of a percentile is already far below the third decimal
MAX_RESAMPLES = 1_000_000


def _probability(value: float, name: str, why: str = "") -> float:
    if not 0 < value < 1 or math.isnan(value):
        raise SeedscopeError(f"{name} must lie strictly between 0 and 1{why}, not {value}")
    return value


def check_confidence(confidence: float, name: str = "confidence") -> float:
    """Refuse a confidence level outside (0, 1); return the share α/2 = (1 − confidence)/2 cut from each tail."""
    _probability(confidence, name)
    return (1 - confidence) / 2


def check_power(power: float, name: str = "power") -> float:
    """Refuse a power (of a minimum detectable difference) outside (0, 1); return it.

    ``name`` is how the user gave it: ``--power`` on the command line says what it means as well.
    """
    why = " (the chance of detecting a real difference)" if name.startswith("--") else ""
    return _probability(power, name, why)


def check_resamples(n_resamples: int) -> int:
    """Refuse a resampling count below one or above :data:`MAX_RESAMPLES` (the same rule in every command)."""
    if n_resamples < 1:
        raise SeedscopeError(f"the number of resamples must be at least 1, not {n_resamples}")
    if n_resamples > MAX_RESAMPLES:
        raise SeedscopeError(
            f"{n_resamples:,} resamples is more than seedscope draws ({MAX_RESAMPLES:,} at most, which bounds memory "
            "and time; 10,000 already gives percentiles to about ±0.005)"
        )
    return n_resamples


def validate_params(**checks: Callable) -> Callable:
    """Decorator: run ``checks[name](value)`` on each named argument (given or default) before the function runs.

    >>> @validate_params(confidence=check_confidence)
    ... def width(values, confidence=0.95):
    ...     return confidence
    >>> width([1], confidence=1.5)
    Traceback (most recent call last):
    ...
    seedscope.errors.SeedscopeError: confidence must lie strictly between 0 and 1, not 1.5
    """

    def decorate(function: Callable) -> Callable:
        signature = inspect.signature(function)
        unknown = set(checks) - set(signature.parameters)
        if unknown:
            raise TypeError(f"{function.__name__} has no parameter {', '.join(sorted(unknown))} to validate")

        @functools.wraps(function)
        def checked(*args, **kwargs):
            bound = signature.bind(*args, **kwargs)
            for name, check in checks.items():
                value = bound.arguments.get(name, signature.parameters[name].default)
                check(value)
            return function(*args, **kwargs)

        return checked

    return decorate
