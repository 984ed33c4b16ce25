"""The data_order sampler: private generator, same permutations as a stock set_seed script; non-finite losses
filtered on the device."""

import pytest
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


def test_a_non_finite_loss_counts_as_the_trainers_filter_counts_it_without_a_read_per_step(tiny_bert, data_dir,
                                                                                           monkeypatch, tmp_path):
    """The loss turns NaN on the third batch (and stays NaN: the weights are then NaN): each NaN step counts as the
    mean of the steps before it, the ``Trainer``'s ``logging_nan_inf_filter`` rule, and no step reads the loss."""
    import math

    from seedscope.plan import RunSpec
    from seedscope.plan.seeds import FactorSeeds
    from seedscope.runners.finetune import runner
    from seedscope.runners.finetune.fused_training import masks_without_reads
    from seedscope.runners.finetune.host_reads import HostReads
    from seedscope.runners.finetune.trainer import SeededTrainer

    raw, original = [], SeededTrainer.compute_loss

    def compute_loss(self, *args, **kwargs):
        loss = original(self, *args, **kwargs)
        loss = loss * float("nan") if len(raw) == 2 else loss
        raw.append(loss.detach().clone())
        return loss

    monkeypatch.setattr(SeededTrainer, "compute_loss", compute_loss)
    hparams = {"max_train_examples": 32, "max_steps": 6, "per_device_train_batch_size": 8}
    spec = RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(1), hparams=hparams)
    prepared = runner.prepare(spec, data_dir)
    trainer = runner.seeded_trainer(runner.fresh_model(spec, prepared), spec, prepared, str(tmp_path))
    with HostReads() as reads:
        output = trainer.train()
    total = 0.0
    for step, loss in enumerate(float(value) for value in raw):
        total += loss if math.isfinite(loss) else total / (1 + step)
    assert len(raw) == 6 and not math.isfinite(float(raw[5]))
    assert output.training_loss == pytest.approx(total / 6, rel=1e-6)
    # the Trainer's filter read each loss twice (isnan, isinf); what is left: the model's own check of its padding
    # mask (transformers' masking, once a step), the data loader's seed (a host tensor, once an epoch: two), and the
    # training loss, read once when training ends
    if masks_without_reads():
        assert reads.scalar_reads <= 6 + 2 + 1  # older releases read the mask inside the model (255 reads on 5.9)
    assert trainer.args.logging_nan_inf_filter  # evaluation still filters its losses
