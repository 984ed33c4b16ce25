"""The data_order sampler: private generator, same permutations as a stock set_seed script."""

import torch
from accelerate.data_loader import SeedableRandomSampler

from seedscope.runners.finetune.trainer import EpochSeededSampler


def test_matches_the_stock_trainer_permutation_epoch_by_epoch():
    ours = EpochSeededSampler(37, seed=42)
    torch.manual_seed(42)  # what set_seed does; the stock sampler seeds itself from it
    stock = SeedableRandomSampler(data_source=range(37), data_seed=None)
    for _ in range(3):
        assert list(ours) == list(stock)


def test_ignores_and_leaves_alone_the_global_rng():
    torch.manual_seed(0)
    first = list(EpochSeededSampler(20, seed=1))
    state = torch.get_rng_state()
    torch.manual_seed(123)
    assert list(EpochSeededSampler(20, seed=1)) == first
    torch.set_rng_state(state)
    sampler = EpochSeededSampler(20, seed=1)
    list(sampler)
    assert torch.equal(torch.get_rng_state(), state)


def test_epochs_differ_and_seeds_differ():
    sampler = EpochSeededSampler(20, seed=1)
    assert list(sampler) != list(sampler)
    assert list(EpochSeededSampler(20, seed=1)) != list(EpochSeededSampler(20, seed=2))
    assert sorted(EpochSeededSampler(20, seed=3)) == list(range(20))


def test_set_epoch_picks_the_epoch_permutation():
    sampler = EpochSeededSampler(15, seed=5)
    first, second = list(sampler), list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) == second
    sampler.set_epoch(0)
    assert list(sampler) == first
