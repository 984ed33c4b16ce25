"""The growing key/value cache: the same keys as transformers' concatenating one, without copying them each step."""

from __future__ import annotations

import pytest
import torch
from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

from seedscope.runners.icl import kv_buffer
from seedscope.runners.icl.kv_buffer import GrowingLayer, with_room
from seedscope.runners.icl.lm_scoring import generate
from seedscope.runners.icl.sampling import Sampler

from .test_lm_scoring import run_prompts, tiny_lm  # noqa: F401  (the module's model fixture)


def states(rows: int, length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return tuple(torch.randn(rows, 2, length, 4, generator=generator) for _ in range(2))


def test_a_growing_layer_holds_what_a_concatenating_layer_holds():
    plain = DynamicLayer()
    plain.update(*states(3, 5, 0))
    growing = GrowingLayer(plain.keys.clone(), plain.values.clone(), room=4)
    buffer = growing.key_buffer.data_ptr()
    for step in range(6):  # two more than the room kept: it makes more
        new = states(3, 1, step + 1)
        assert all(torch.equal(a, b) for a, b in zip(plain.update(*new), growing.update(*new)))
        assert growing.get_seq_length() == plain.get_seq_length() == 6 + step
        if step < 4:
            assert growing.key_buffer.data_ptr() == buffer  # written in place, not copied
    for change in (lambda layer: layer.batch_repeat_interleave(2), lambda layer: layer.batch_select_indices(torch.tensor([0, 3, 5]))):
        change(plain)
        change(growing)
        assert torch.equal(plain.keys, growing.keys) and torch.equal(plain.values, growing.values)
    new = states(3, 2, 9)
    assert all(torch.equal(a, b) for a, b in zip(plain.update(*new), growing.update(*new)))


def test_only_plain_layers_are_given_room():
    sliding = DynamicSlidingWindowLayer(sliding_window=4)
    sliding.update(*states(1, 3, 0))
    plain = DynamicLayer()
    plain.update(*states(1, 3, 1))
    cache = DynamicCache()
    cache.layers = [plain, sliding]
    layers = with_room(cache, 2).layers
    assert isinstance(layers[0], GrowingLayer) and layers[1] is sliding


@pytest.mark.parametrize("sampler", [None, Sampler(samples=3, seed=5, temperature=1.2, top_p=0.9)])
def test_decoding_gives_the_same_texts_as_with_transformers_own_cache(tiny_lm, data_dir, monkeypatch, sampler):  # noqa: F811
    model, tokenizer = tiny_lm
    prompts = run_prompts("sst2", "minimal", tokenizer, data_dir, tests=6)
    ids = [f"ex{i}" for i in range(6)]

    def texts():
        return generate(model, tokenizer, prompts, "causal", batch_size=4, max_new_tokens=7, sampler=sampler,
                        example_ids=ids, stop=["\n"])

    growing = texts()
    monkeypatch.setattr(kv_buffer, "with_room", lambda cache, room: cache)  # transformers' concatenating cache
    assert texts() == growing
