"""Attention of every fused member in one call: the member axis folded into the batch axis.

A fused group computes its members' losses under ``torch.func.vmap``. PyTorch has no batching
rule for some of its attention kernels (on a CPU the flash kernel, and attention's backward on a
GPU, pytorch#117016), so vmap would run them member by member, in a loop. Attention has no
weights: K members' batches of B sequences are simply K·B sequences. The rule given here
(:func:`folded`) reshapes ``[K, B, …]`` to ``[K·B, …]``, calls
``torch.nn.functional.scaled_dot_product_attention`` once and reshapes back, so the kernel PyTorch
picks (flash, memory-efficient, cuDNN or math, under the run's determinism settings) runs once
for the whole group, forward and backward. The rule runs on the tensors autograd already tracks,
so the backward is that kernel's own; outside vmap nothing is folded.

vmap learns the rule two ways. Run as it is, through :class:`FoldedAttention`, an
``autograd.Function`` with a ``vmap`` method (every torch the package declares). Compiled
(``torch.compile``, for CUDA graphs), through the operator ``seedscope::folded_attention``, whose
vmap rule the compiler keeps where it would trace an ``autograd.Function``'s forward instead and
unroll attention member by member; :func:`compiled_fold_works` says whether the installed torch
differentiates through that rule (torch 2.5 does not).
"""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

_LIBRARY = torch.library.Library("seedscope", "DEF")
_LIBRARY.define("folded_attention(Tensor query, Tensor key, Tensor value, Tensor? attn_mask, bool is_causal, "
                "float? scale, bool enable_gqa) -> Tensor")


def _attention(query, key, value, attn_mask, is_causal, scale, enable_gqa) -> torch.Tensor:
    return F.scaled_dot_product_attention(query, key, value, attn_mask=attn_mask, is_causal=is_causal, scale=scale,
                                          enable_gqa=enable_gqa)


def attention(query, key, value, attn_mask=None, is_causal=False, scale=None, enable_gqa=False) -> torch.Tensor:
    """``scaled_dot_product_attention`` without dropout; under vmap one call for every member."""
    if torch.compiler.is_compiling():
        return torch.ops.seedscope.folded_attention(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    if torch._C._functorch.is_batchedtensor(query):
        return FoldedAttention.apply(query, key, value, attn_mask, is_causal, scale, enable_gqa)
    return _attention(query, key, value, attn_mask, is_causal, scale, enable_gqa)


def folded(members: int, in_dims, query, key, value, attn_mask, is_causal, scale, enable_gqa):
    """vmap's rule: ``members`` members' attention as one call, and the output's member dimension (0)."""
    rank = query.dim() - int(in_dims[0] is not None)
    first = [_members_first(t, dim, members, rank) for t, dim in zip((query, key, value, attn_mask), in_dims)]
    if rank >= 4:  # [members, batch, heads, length, dim]: K·B sequences
        batch = first[0].shape[1]
        first = [None if t is None else t.expand(members, batch, *t.shape[2:]).reshape(-1, *t.shape[2:])
                 for t in first]
    out = _attention(*first, is_causal, scale, enable_gqa)
    return (out.reshape(members, -1, *out.shape[1:]) if rank >= 4 else out), 0


def _members_first(t: torch.Tensor | None, dim: int | None, members: int, rank: int) -> torch.Tensor | None:
    """``t`` with the members first: a tensor every member shares (``dim`` None) expanded to them, a mask of lower
    rank than the query given the leading ones broadcasting would give it."""
    if t is None:
        return None
    t = t.unsqueeze(0).expand(members, *t.shape) if dim is None else t.movedim(dim, 0)
    return t.reshape(members, *[1] * (rank - t.dim() + 1), *t.shape[1:])


class FoldedAttention(torch.autograd.Function):
    """Scaled-dot-product attention whose vmap rule is :func:`folded` (see the module)."""

    @staticmethod
    def forward(query, key, value, attn_mask, is_causal, scale, enable_gqa):
        return _attention(query, key, value, attn_mask, is_causal, scale, enable_gqa)

    @staticmethod
    def setup_context(ctx, inputs, output):
        """Nothing to keep: the Function is only ever applied under vmap, whose rule is differentiated instead."""

    @staticmethod
    def vmap(info, in_dims, *args):
        return folded(info.batch_size, in_dims, *args)


_LIBRARY.impl("folded_attention", _attention, "CompositeImplicitAutograd")
torch.library.register_vmap("seedscope::folded_attention", lambda info, in_dims, *args: folded(info.batch_size,
                                                                                                in_dims, *args))


@functools.cache
def compiled_fold_works() -> bool:
    """Whether gradients flow through the operator's vmap rule on the installed torch (checked once, on a CPU)."""
    query = torch.ones(2, 1, 1, 2, 2, requires_grad=True)
    try:
        out = torch.vmap(lambda q: torch.ops.seedscope.folded_attention(q, q, q, None, False, None, False))(query)
        out.sum().backward()
    except RuntimeError:
        return False
    return query.grad is not None
