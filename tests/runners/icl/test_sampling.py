"""Sampled decoding: the processed distribution against a slow one, on hand-worked and random cases.

(That a sample does not depend on its batch is tested with the decoder, in test_lm_scoring.py.)"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seedscope.plan.seeds import sample_seed
from seedscope.runners.icl.sampling import Sampler


def slow_distribution(logits: np.ndarray, temperature: float, top_k: int | None, top_p: float | None) -> np.ndarray:
    """One row's sampling distribution, token by token as the definitions read (HF's warpers' order: k, then p)."""
    scaled = logits / temperature
    keep = np.ones(len(scaled), dtype=bool)
    if top_k is not None:
        keep &= scaled >= np.sort(scaled)[::-1][top_k - 1]
    probs = np.where(keep, np.exp(scaled - scaled[keep].max()), 0.0)
    probs /= probs.sum()
    if top_p is not None:
        kept, mass = set(), 0.0
        for token in sorted(range(len(probs)), key=lambda t: (-probs[t], t)):
            if mass >= top_p or probs[token] == 0:
                break
            kept.add(token)
            mass += probs[token]
        probs = np.array([p if t in kept else 0.0 for t, p in enumerate(probs)])
        probs /= probs.sum()
    return probs


def drawn_distribution(sampler: Sampler, logits: np.ndarray, draws: int = 20_000) -> np.ndarray:
    rows = torch.tensor(np.repeat(logits[None], draws, axis=0))
    uniforms = torch.from_numpy(np.random.default_rng(0).random(draws))
    return np.bincount(sampler.draw(rows, uniforms).numpy(), minlength=len(logits)) / draws


def test_hand_worked_top_p_and_top_k():
    """Probabilities 0.5, 0.3, 0.2 (logits their logs): top-p 0.6 keeps two tokens, the uniform picks by their cumsum."""
    logits = torch.log(torch.tensor([[0.2, 0.5, 0.3]]).double()).repeat(3, 1)
    sampler = Sampler(samples=1, seed=0, top_p=0.6)
    # kept: 0.5 / 0.8 = 0.625 (token 1), then 0.375 (token 2)
    assert sampler.draw(logits, torch.tensor([0.0, 0.62, 0.63])).tolist() == [1, 1, 2]
    assert Sampler(samples=1, seed=0, top_k=1).draw(logits, torch.tensor([0.0, 0.5, 0.99])).tolist() == [1, 1, 1]
    # no truncation: the vocabulary's order, cumsum 0.2, 0.7, 1.0
    assert Sampler(samples=1, seed=0).draw(logits, torch.tensor([0.19, 0.21, 0.71])).tolist() == [0, 1, 2]


@pytest.mark.parametrize("case", range(6))
def test_draws_follow_the_slow_distribution(case):
    rng = np.random.default_rng(case)
    logits = rng.normal(size=12) * 2
    temperature = float(rng.uniform(0.3, 2.0))
    top_k = [None, 4, 8][case % 3]
    top_p = [None, 0.7, 0.9][case // 2 % 3]
    expected = slow_distribution(logits, temperature, top_k, top_p)
    drawn = drawn_distribution(Sampler(samples=1, seed=0, temperature=temperature, top_k=top_k, top_p=top_p), logits)
    assert (drawn[expected == 0] == 0).all()
    np.testing.assert_allclose(drawn, expected, atol=0.015)


def test_a_sample_seed_is_stable_and_its_own():
    assert sample_seed(42, "17", 3) == sample_seed(42, "17", 3)
    seeds = {sample_seed(s, e, k) for s in (1, 2) for e in ("a", "b") for k in range(3)}
    assert len(seeds) == 12
