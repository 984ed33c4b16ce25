"""The one input check of the seed-level statistics: a list of per-run scores, finite, long enough."""

from __future__ import annotations

import numpy as np

from seedscope.errors import SeedscopeError


def check_scores(values, what: str, minimum: int = 1) -> np.ndarray:
    """``values`` as a flat float array; fewer than ``minimum`` values or a NaN / inf is one clear error."""
    array = np.asarray(values, dtype=float).ravel()
    if len(array) < minimum:
        raise SeedscopeError(f"{what} needs at least {minimum} value(s), got {len(array)}")
    if not np.isfinite(array).all():
        raise SeedscopeError(f"{what} contains a NaN or infinite value")
    return array
