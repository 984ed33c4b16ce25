"""A ``Trainer`` whose batch order comes from the ``data_order`` seed alone.

The stock Trainer draws its shuffling seed from the global RNG state (or ``data_seed``
through accelerate's seedable sampler) and, with length grouping, from the global torch RNG
— which dropout also draws from. :class:`SeededTrainer` gives the train sampler its own
generator, seeded from ``data_order`` only: epoch e is ``torch.randperm(n)`` with seed
``data_order + e``, exactly the permutation the stock Trainer produces after
``set_seed(seed)``, so a tied-seed run reproduces a plain script. Evaluation is always in
dataset order (predictions line up with example ids).
"""

from __future__ import annotations

import torch
from torch.utils.data import Sampler, SequentialSampler
from transformers import Trainer, TrainerCallback
from transformers.trainer_pt_utils import LengthGroupedSampler

from seedscope.runners.result import StepHook


class EpochSeededSampler(Sampler[int]):
    """Random permutation per epoch from a private generator seeded ``seed + epoch``."""

    def __init__(self, n: int, seed: int):
        self.n, self.seed, self.epoch = n, seed, 0
        self.generator = torch.Generator()

    def __len__(self) -> int:
        return self.n

    def set_epoch(self, epoch: int) -> None:
        """Called by the Trainer's data loader before each epoch (like accelerate's seedable sampler)."""
        self.epoch = epoch

    def __iter__(self):
        self.generator.manual_seed(self.seed + self.epoch)
        self.epoch += 1
        yield from torch.randperm(self.n, generator=self.generator).tolist()


class SeededTrainer(Trainer):
    """Trainer with a ``data_order``-seeded train sampler and an in-order eval sampler."""

    def __init__(self, *args, data_order_seed: int, lengths: list[int] | None = None, **kwargs):
        self.data_order_seed = data_order_seed
        self.lengths = lengths  # per training example, for group_by_length
        self.filtered = None  # while training: the sum of the losses so far, on the device
        super().__init__(*args, **kwargs)

    def train(self, *args, **kwargs):
        """Train with the ``Trainer``'s own filter of non-finite losses off — it reads every step's loss on the host,
        a sync per step on a GPU — and :meth:`training_step`'s on the device in its place."""
        filtering = self.args.logging_nan_inf_filter
        self.args.logging_nan_inf_filter = False
        self.filtered = torch.zeros((), dtype=torch.float32, device=self.args.device) if filtering else None
        try:
            return super().train(*args, **kwargs)
        finally:
            self.args.logging_nan_inf_filter = filtering  # evaluation filters its losses as before

    def training_step(self, model, inputs, num_items_in_batch=None):
        """The step's loss; a NaN or infinite one counts as the mean of the steps so far, as the ``Trainer``'s filter
        counts it (its logged mean; seedscope's runs log nothing while they train), without reading it."""
        loss = super().training_step(model, inputs, num_items_in_batch)
        if self.filtered is None:
            return loss
        loss = torch.where(torch.isfinite(loss), loss, self.filtered / (1 + self.state.global_step))
        self.filtered = self.filtered + loss
        return loss

    def _get_train_sampler(self, train_dataset=None) -> Sampler:
        dataset = train_dataset if train_dataset is not None else self.train_dataset
        if self.args.train_sampling_strategy == "group_by_length":
            return LengthGroupedSampler(
                self.args.train_batch_size * self.args.gradient_accumulation_steps,
                lengths=self.lengths,
                generator=torch.Generator().manual_seed(self.data_order_seed),
            )
        return EpochSeededSampler(len(dataset), self.data_order_seed)

    def _get_eval_sampler(self, eval_dataset) -> Sampler:
        return SequentialSampler(eval_dataset)


class StepProgress(TrainerCallback):
    """Report optimiser steps to a hook (the executors' progress display)."""

    def __init__(self, hook: StepHook):
        self.hook = hook

    def on_train_begin(self, args, state, control, **kwargs):
        self.hook(0, state.max_steps)

    def on_step_end(self, args, state, control, **kwargs):
        self.hook(state.global_step, state.max_steps)
