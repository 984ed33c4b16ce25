"""A key/value cache that grows in place: each decoding step writes its token's keys into room kept for it.

transformers' ``DynamicCache`` concatenates every layer's keys and values with the new token's
at every step, copying the whole cache each time. With 8 samples of 16 prompts (128 rows of a
few hundred tokens) those copies took a third of a decoding step on a CPU. Here each layer keeps
a buffer with room for the tokens still to come and gives attention a view of its filled part:
the same keys in the same order, so the same numbers, without the copies.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer


class GrowingLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values are the filled part of a buffer with ``room`` more positions."""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor, room: int):
        super().__init__()
        self.length = keys.shape[-2]
        self.key_buffer = _with_room(keys, room)
        self.value_buffer = _with_room(values, room)
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self._show()

    def _show(self) -> None:
        self.keys = self.key_buffer[:, :, : self.length]
        self.values = self.value_buffer[:, :, : self.length]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        """Write the new positions into the room (more room is made if a caller asks for more than was kept)."""
        new = key_states.shape[-2]
        if self.length + new > self.key_buffer.shape[-2]:
            self.key_buffer, self.value_buffer = _with_room(self.keys, new), _with_room(self.values, new)
        self.key_buffer[:, :, self.length: self.length + new] = key_states
        self.value_buffer[:, :, self.length: self.length + new] = value_states
        self.length += new
        self._show()
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        self.key_buffer, self.value_buffer = self.key_buffer[indices], self.value_buffer[indices]
        self._show()

    def batch_repeat_interleave(self, repeats: int) -> None:
        self.key_buffer = self.key_buffer.repeat_interleave(repeats, dim=0)
        self.value_buffer = self.value_buffer.repeat_interleave(repeats, dim=0)
        self._show()


def _with_room(states: torch.Tensor, room: int) -> torch.Tensor:
    buffer = states.new_empty((*states.shape[:2], states.shape[2] + room, states.shape[3]))
    buffer[:, :, : states.shape[2]] = states
    return buffer


def with_room(cache, room: int):
    """``cache`` with each plain layer given ``room`` positions to grow into (sliding-window and other layers kept)."""
    cache.layers = [GrowingLayer(layer.keys, layer.values, room) if type(layer) is DynamicLayer else layer
                    for layer in cache.layers]
    return cache
