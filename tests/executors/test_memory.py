"""The memory estimate a packing executor uses before any run measured its peak: hand-worked values."""

from __future__ import annotations

from seedscope.executors.memory import training_bytes


def test_training_bytes_by_hand():
    # MiniLM-L6 (22,713,216 parameters, hidden 384, 6 layers, 12 heads) at batch 32 and 64 tokens:
    # states 22,713,216 × 20 = 454,264,320; activations 32 × 64 × 6 × (20 × 384 + 4 × 12 × 64) × 4
    # = 12,288 × 10,752 × 4 = 528,482,304 (its run on the CPU grew its peak by 990 MiB; this is 937 MiB)
    assert training_bytes(22_713_216, 32, 64, 384, 6, 12) == 454_264_320 + 528_482_304
    assert training_bytes(1, 0, 64, 384, 6, 12) == 20  # no batch: the parameters' states only
    assert training_bytes(0, 1, 1, 1, 1, 1, value_bytes=2) == (20 + 4) * 2  # half-width activations
