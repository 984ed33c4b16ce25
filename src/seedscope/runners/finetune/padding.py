"""Length buckets: every batch padded up to one of a few fixed lengths, so a run meets few shapes.

Dynamic padding gives nearly every batch its own length; a GPU pays for each new shape (cuDNN
builds an attention plan per (batch, length), CUDA graphs need fixed shapes). ``padding:
buckets`` pads each batch to the shortest rung of a ladder that holds its longest row. The batches
themselves — which examples, in which order, from which seeds — are those of dynamic padding;
padded positions are masked, so a prediction moves by rounding only (tested within 1e-5 in fp32).

The ladder is geometric, at most :data:`RUNGS` lengths, from the median length of the run's
examples (a batch's longest row is nearly always above it) up to its longest (never above
``max_seq_length``), rungs below 64 rounded up to a multiple of 8 and those above to 16. It is
drawn from the run's own examples, so it needs no setting and adapts to short (SST-2) and long
(RTE) tasks alike; docs/reference/config.md gives the padding it costs against dynamic padding.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from statistics import median

#: the most padded lengths a run's batches take
RUNGS = 8


def feature_length(feature: dict) -> int:
    """Tokens in a feature (longest candidate for multiple choice): what length grouping sorts by and what a
    batch's rung must hold."""
    ids = feature["input_ids"]
    return max(len(i) for i in ids) if ids and isinstance(ids[0], list) else len(ids)


def _round_up(length: float) -> int:
    step = 8 if length <= 64 else 16
    return int(-(-length // step) * step)


def bucket_ladder(lengths: Sequence[int], max_length: int) -> tuple[int, ...]:
    """At most :data:`RUNGS` padded lengths for examples of ``lengths`` (ascending; the last is the longest)."""
    top = min(max_length, max(lengths))
    low = max(1.0, float(median(lengths)))
    ratio = (top / low) ** (1 / (RUNGS - 1)) if top > low else 1.0
    return tuple(sorted({min(top, _round_up(top / ratio**i)) for i in range(RUNGS)}))


def example_lengths(*feature_lists: Sequence[dict]) -> list[int]:
    """Tokens of every feature (the longest candidate of a multiple-choice one), over all the lists."""
    return [feature_length(f) for features in feature_lists for f in features]


class BucketPadding:
    """A collator that pads each batch to its ladder rung, with the collator ``pad_to(length)`` of that length."""

    def __init__(self, pad_to: Callable[[int], Callable], ladder: Sequence[int], longest: Callable):
        self.ladder = tuple(ladder)
        self.collators = {length: pad_to(length) for length in self.ladder}
        self.longest = longest  # dynamic padding, for a batch longer than the ladder (not drawn from its examples)

    def __call__(self, features: list[dict]):
        need = max(feature_length(f) for f in features)
        rung = bisect.bisect_left(self.ladder, need)
        return self.collators[self.ladder[rung]](features) if rung < len(self.ladder) else self.longest(features)
