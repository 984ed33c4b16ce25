"""Hyper-parameters: a wrong value is refused in one sentence naming it."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan.hparams import FinetuneSettings


@pytest.mark.parametrize("value", [0, -2, 1.5, "two"])
def test_fused_chunk_takes_a_positive_whole_number_of_members(value):
    with pytest.raises(SeedscopeError, match="^hyper-parameter fused_chunk: "):
        FinetuneSettings.from_hparams({"fused_chunk": value})
    assert FinetuneSettings.from_hparams({"fused_chunk": 2}).fused_chunk == 2
    assert FinetuneSettings.from_hparams({}).fused_chunk is None
