"""What a runner hands back: the run's predictions and what is needed to trust them."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd


@dataclass
class RunResult:
    """One finished run.

    ``predictions`` is a prediction table (``seedscope.predictions``: run, example_id,
    prediction, label, prob_<class>; label names for classification, floats for
    regression); ``metrics`` hold fractions in [0, 1] (correlations in [−1, 1]) and losses;
    ``timings`` seconds and examples per second; ``environment`` libraries, device,
    determinism flags and the seed of every factor. A prompted run also keeps what it scored:
    ``prompt_prefix`` (the text shared by every example, stored once) and, in its predictions,
    each example's ``query`` and ``continuations`` (see :mod:`seedscope.store.views`).
    """

    run_id: str
    predictions: pd.DataFrame
    metrics: dict = field(default_factory=dict)
    timings: dict = field(default_factory=dict)
    environment: dict = field(default_factory=dict)
    prompt_prefix: str | None = None
