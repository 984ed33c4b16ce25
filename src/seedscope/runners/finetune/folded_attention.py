"""Attention of every fused member in one call: the member axis folded into the batch axis.

A fused group computes its members' losses under ``torch.func.vmap``. PyTorch has no batching
rule for some of its attention kernels (on a CPU the flash kernel, and attention's backward on a
GPU, pytorch#117016), so vmap would run them member by member, in a loop. Attention has no
weights: K members' batches of B sequences are simply K·B sequences. :class:`FoldedAttention`
gives vmap that rule — reshape ``[K, B, …]`` to ``[K·B, …]``, call
``torch.nn.functional.scaled_dot_product_attention`` once, reshape back — so the kernel PyTorch
picks (flash, memory-efficient, cuDNN or math, under the run's determinism settings) runs once
for the whole group, forward and backward. The rule runs on the tensors autograd already tracks,
so the backward is that kernel's own; outside vmap nothing is folded.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def attention(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False) -> torch.Tensor:
    """``scaled_dot_product_attention`` without dropout; under vmap one call for every member."""
    if torch._C._functorch.is_batchedtensor(query):
        return FoldedAttention.apply(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                                          enable_gqa=enable_gqa)


class FoldedAttention(torch.autograd.Function):
    """Scaled-dot-product attention whose vmap rule folds the members into the batch (see the module)."""

    @staticmethod
    def forward(query, key, value, attn_mask, is_causal, scale, enable_gqa):
        return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                                              enable_gqa=enable_gqa)

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Nothing to keep: the Function is only ever applied under vmap, whose rule is differentiated instead."""

    @staticmethod
    def vmap(info, in_dims, query, key, value, attn_mask, is_causal, scale, enable_gqa):
        members, rank = info.batch_size, query.dim() - int(in_dims[0] is not None)
        first = [_members_first(t, dim, members, rank) for t, dim in zip((query, key, value, attn_mask), in_dims)]
        if rank >= 4:  # [members, batch, heads, length, dim]: K·B sequences
            batch = first[0].shape[1]
            first = [None if t is None else t.expand(members, batch, *t.shape[2:]).reshape(-1, *t.shape[2:])
                     for t in first]
        out = F.scaled_dot_product_attention(*first[:3], attn_mask=first[3], is_causal=is_causal, scale=scale,
                                             enable_gqa=enable_gqa)
        return (out.reshape(members, -1, *out.shape[1:]) if rank >= 4 else out), 0


def _members_first(t: torch.Tensor | None, dim: int | None, members: int, rank: int) -> torch.Tensor | None:
    """``t`` with the members first: a tensor every member shares (``dim`` None) expanded to them, a mask of lower
    rank than the query given the leading ones broadcasting would give it."""
    if t is None:
        return None
    t = t.unsqueeze(0).expand(members, *t.shape) if dim is None else t.movedim(dim, 0)
    return t.reshape(members, *[1] * (rank - t.dim() + 1), *t.shape[1:])
