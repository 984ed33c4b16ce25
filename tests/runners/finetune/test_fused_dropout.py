"""Each fused member's dropout: its own seed's, whatever members share its group, at the asked rate."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch.func import vmap

from seedscope.runners.finetune.fused_dropout import MemberDropout, field, member_key, mix


def _dropped(seeds: list[int], shape=(4, 16, 32), p=0.1, step=0) -> torch.Tensor:
    """Each member's dropout of a tensor of ones, computed under vmap as a fused pass does."""

    def member(seed, values):
        with MemberDropout(member_key(seed, step)):
            return F.dropout(values, p=p, training=True), F.dropout(values, p=p, training=True)

    ones = torch.ones(len(seeds), *shape)
    first, second = vmap(member, randomness="error")(torch.tensor(seeds), ones)
    return torch.stack([first, second], dim=1)


def test_the_hash_stays_in_32_bits_and_spreads_evenly():
    values = mix(torch.arange(0, 2**32, 2**20, dtype=torch.int64))
    assert values.min() >= 0 and values.max() < 2**32 and values.unique().numel() == values.numel()  # a bijection
    drawn = field(torch.tensor(42), torch.Size([64, 64, 16])).double() / 2**32
    assert drawn.min() >= 0 and drawn.max() < 1 and abs(float(drawn.mean()) - 0.5) < 0.01
    assert abs(float((drawn < 0.1).double().mean()) - 0.1) < 0.01


def test_a_members_masks_are_its_own_seeds_whatever_its_group():
    alone, beside_one, beside_other = _dropped([7]), _dropped([7, 8]), _dropped([9, 7])
    assert torch.equal(alone[0], beside_one[0]) and torch.equal(alone[0], beside_other[1])
    assert not torch.equal(beside_one[0], beside_one[1])  # another seed, other masks
    assert not torch.equal(alone[0, 0], alone[0, 1])  # the next call of the same step draws anew
    assert not torch.equal(alone, _dropped([7], step=1))  # and so does the next step


@pytest.mark.parametrize("p", [0.1, 0.5])
def test_dropout_keeps_the_rate_and_the_expectation(p):
    dropped = _dropped([3], shape=(64, 64, 16), p=p)
    kept = (dropped != 0).double().mean()
    assert abs(float(kept) - (1 - p)) < 0.01
    assert torch.allclose(dropped[dropped != 0], torch.tensor(1 / (1 - p)))  # kept values scaled as torch scales them


def test_inactive_dropout_passes_through_and_attention_dropout_is_the_members():
    values = torch.randn(2, 3, 5)
    with MemberDropout(member_key(torch.tensor(1), 0)):
        assert F.dropout(values, p=0.0, training=True) is values
        assert F.dropout(values, p=0.5, training=False) is values
        query, key, value = torch.randn(3, 2, 4, 8).unbind(0)
        plain = F.scaled_dot_product_attention(query, key, value)
        mask = torch.ones(4, 4, dtype=torch.bool)
        assert torch.allclose(F.scaled_dot_product_attention(query, key, value, attn_mask=mask), plain, atol=1e-6)
        dropped = F.scaled_dot_product_attention(query, key, value, dropout_p=0.5)
    assert not torch.allclose(dropped, plain)
