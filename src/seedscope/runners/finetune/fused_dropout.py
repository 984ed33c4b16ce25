"""Each fused member's own dropout stream, drawn from its ``optimisation`` seed alone.

Under ``torch.func.vmap`` one forward pass computes every member of a fused group, so torch's
dropout would draw every member's mask from one global generator: a member's masks would depend
on the seeds of the members beside it, and two members that share an ``optimisation`` seed (a
factor study holds it while another factor varies) would still drop different units.
:class:`MemberDropout` replaces every dropout inside the pass (``torch.nn.functional.dropout``, and
the dropout of scaled-dot-product attention) by a counter-based one: the keep mask of a value is a
hash of the member's seed, the optimiser step, the call's index within the step and the value's
coordinates. Integer arithmetic only, so vmap batches it over the members' seeds like any other
operation; scaled-dot-product attention with dropout is computed plainly for the same reason
(without dropout it is torch's own kernel, as in the sequential run, called once for all the
members: :mod:`.folded_attention`). The mask of a member is the
same whichever members share its group. The masks are not torch's (a fused run with dropout
cannot equal a sequential one bit for bit), but they are drawn with the same probability,
independently per value.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from seedscope.runners.finetune.folded_attention import attention

_WORD = 0xFFFFFFFF
#: the arguments of the two functions replaced, in order, with their defaults
_DROPOUT = {"input": None, "p": 0.5, "training": True, "inplace": False}
_ATTENTION = {"query": None, "key": None, "value": None, "attn_mask": None, "dropout_p": 0.0, "is_causal": False,
              "scale": None, "enable_gqa": False}


def _arguments(names: dict, args: tuple, kwargs: dict) -> dict:
    """A call's arguments by name, defaults filled in (plain dictionaries, which ``torch.compile`` traces, where
    ``inspect.Signature.bind`` breaks its graph)."""
    return {**names, **dict(zip(names, args)), **kwargs}


def _times(x: torch.Tensor, constant: int) -> torch.Tensor:
    """``x * constant`` modulo 2³² for 32-bit ``x``, in int64 without overflow (16 bits of the constant at a time)."""
    low, high = constant & 0xFFFF, constant >> 16
    return (x * low + (((x * high) & 0xFFFF) << 16)) & _WORD


def mix(x: torch.Tensor) -> torch.Tensor:
    """A 32-bit integer hash (lowbias32) of int64 tensors holding 32-bit values."""
    x = x ^ (x >> 16)
    x = _times(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _times(x, 0x846CA68B)
    return x ^ (x >> 16)


def field(key: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """32-bit values of ``shape`` (as int64), a hash of ``key`` (an int64 scalar) and each value's coordinates."""
    hashed = mix(key & _WORD)
    for dim, size in enumerate(shape):
        index = torch.arange(size, device=key.device, dtype=torch.int64).view([size] + [1] * (len(shape) - dim - 1))
        hashed = mix(hashed ^ index)
    return hashed


def member_key(seed: torch.Tensor, step: int) -> torch.Tensor:
    """A member's key for one optimiser step: its seed's hash mixed with the step."""
    return mix(mix(seed & _WORD) ^ step)


class MemberDropout(TorchFunctionMode):
    """Within the block, dropout draws from ``key`` (a member's :func:`member_key`; batched under vmap).

    Each call gets the next index, so the masks of one step's calls differ; inactive dropout (p = 0,
    or evaluation) passes its input through as torch's does.
    """

    def __init__(self, key: torch.Tensor):
        super().__init__()
        self.key, self.calls = key, 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is F.dropout:
            values = _arguments(_DROPOUT, args, kwargs)
            if values["training"] and values["p"] > 0:
                return self._drop(values["input"], values["p"])
            return values["input"]
        if func is F.scaled_dot_product_attention:
            return self._attention(**_arguments(_ATTENTION, args, kwargs))
        return func(*args, **kwargs)

    def _drop(self, values: torch.Tensor, p: float) -> torch.Tensor:
        self.calls += 1
        if p >= 1:
            return values * 0.0
        keep = field(mix(self.key ^ self.calls), values.shape) >= round(p * 2**32)  # kept with probability 1 − p
        return torch.where(keep, values / (1.0 - p), 0.0)

    def _attention(self, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa):
        """Without dropout, torch's kernel, once for all the members (:mod:`.folded_attention`): the sequential run's
        numbers. With dropout, computed plainly (the math kernel's steps), which vmap batches over the members, with
        the member's dropout."""
        if dropout_p == 0:
            return attention(query, key, value, attn_mask, is_causal, scale, enable_gqa)
        if enable_gqa:  # grouped-query attention: each key/value head serves a group of query heads
            group = query.size(-3) // key.size(-3)
            key, value = key.repeat_interleave(group, dim=-3), value.repeat_interleave(group, dim=-3)
        scale = 1.0 / math.sqrt(query.size(-1)) if scale is None else scale
        weights = query @ key.transpose(-2, -1) * scale
        if is_causal:
            length, total = query.size(-2), key.size(-2)
            weights = weights.masked_fill(~torch.ones(length, total, dtype=torch.bool, device=query.device).tril(), -math.inf)
        if attn_mask is not None:
            weights = weights.masked_fill(~attn_mask, -math.inf) if attn_mask.dtype == torch.bool else weights + attn_mask
        weights = weights.softmax(dim=-1)
        return (self._drop(weights, dropout_p) if dropout_p > 0 else weights) @ value
