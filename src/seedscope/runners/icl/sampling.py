"""Sampled decoding: temperature, top-k and top-p on the logits, one draw per sample from its own seed.

Every sample (a prompt's example id and the sample's index) has a seed of its own
(:func:`~seedscope.plan.seeds.sample_seed`, from the run's ``sampling`` seed) and draws one uniform
number per generated token from it; the token is where that number falls in the processed
distribution's cumulative sum (inverse transform sampling). So a sample is the same whatever
batch it is decoded in and however many samples are asked for; only the logits themselves may
move with the batch (the implementation factor). The processing is vectorised over the batch.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from seedscope.plan.seeds import sample_seed


@dataclass(frozen=True)
class Sampler:
    """How to draw ``samples`` answers per prompt: the ``sampling`` seed and the logit processing."""

    samples: int
    seed: int
    temperature: float = 1.0
    top_p: float | None = None
    top_k: int | None = None

    def seeds(self, example_ids: list[str]) -> list[int]:
        """The seed of every (example, sample) row, example by example, its samples side by side."""
        return [sample_seed(self.seed, example, s) for example in example_ids for s in range(self.samples)]

    def uniforms(self, example_ids: list[str], steps: int) -> torch.Tensor:
        """(rows, steps) uniform numbers in [0, 1): row r's from its own sample seed only."""
        return torch.from_numpy(np.stack([np.random.default_rng(seed).random(steps) for seed in self.seeds(example_ids)]))

    def draw(self, logits: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
        """One token per row of ``logits`` (rows × vocabulary): the processed distribution at ``uniforms``."""
        logits = logits.double() / self.temperature
        if self.top_k is not None and self.top_k < logits.shape[-1]:
            kth = torch.topk(logits, self.top_k, dim=-1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, -torch.inf)
        if self.top_p is None:
            order = None
            probs = torch.softmax(logits, dim=-1)
        else:  # the most likely tokens first: keep those whose mass before them is under top_p (at least one)
            logits, order = torch.sort(logits, dim=-1, descending=True, stable=True)
            probs = torch.softmax(logits, dim=-1)
            before = probs.cumsum(dim=-1) - probs
            probs = probs.masked_fill(before >= self.top_p, 0.0)
        cumulative = probs.cumsum(dim=-1)
        target = (uniforms.to(cumulative.device, cumulative.dtype) * cumulative[:, -1]).unsqueeze(1)
        index = torch.searchsorted(cumulative, target, right=True).clamp(max=probs.shape[-1] - 1)
        index = _last_possible(index, probs)
        return (index if order is None else order.gather(-1, index)).squeeze(1)


def _last_possible(index: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """Move an index that landed on a zero-probability token (rounding at the top of the sum) to the last possible one."""
    impossible = probs.gather(-1, index) == 0
    if impossible.any():
        last = (probs > 0).long().cumsum(dim=-1).argmax(dim=-1, keepdim=True)
        index = torch.where(impossible, last, index)
    return index
