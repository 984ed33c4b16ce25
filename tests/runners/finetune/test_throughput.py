"""Every fine-tuning run's throughput on record: tokens, padding, shapes, model FLOPs and MFU, counted by hand."""

from __future__ import annotations

import math

import pytest
import torch
from transformers import BertConfig, BertForSequenceClassification

from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune import fused
from seedscope.runners.finetune import runner as finetune
from seedscope.runners.finetune.throughput import BatchCount, ModelShape, TokenMeter, training_flops
from seedscope.runners.finetune.trainer import EpochSeededSampler

SMALL = {"max_train_examples": 40, "max_eval_examples": 16, "num_train_epochs": 2, "per_device_train_batch_size": 8,
         "max_seq_length": 64, "learning_rate": 1e-3, "padding": "dynamic"}
FIELDS = ("tokens_per_second", "padding_fraction", "padded_shapes", "model_flops_per_second", "mfu", "train_tokens")


def _tiny_config() -> BertConfig:
    return BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                      max_position_embeddings=64, num_labels=2)


def test_the_flops_formula_by_hand_on_a_tiny_bert():
    model = BertForSequenceClassification(_tiny_config())
    # per layer: q, k, v, o 4·(32·32 + 32) = 4224, two LayerNorms 2·64, intermediate 32·64 + 64 = 2112, output
    # 64·32 + 32 = 2080 → 8544; the embeddings' LayerNorm 64 (its three tables are embeddings), pooler 32·32 + 32
    # = 1056, classifier 32·2 + 2 = 66
    n = 2 * 8544 + 64 + 1056 + 66
    shape = ModelShape.of(model)
    assert (shape.trained, shape.frozen, shape.layers, shape.attention_width) == (n, 0, 2, 32)
    # two sequences of 3 and 5 real tokens: 6·N·8 + 12·L·(H·Q)·(3² + 5²)
    assert training_flops(shape, 8, 34) == 6 * n * 8 + 12 * 2 * 32 * 34
    for name, p in model.named_parameters():  # a frozen base (as under LoRA) needs no weight gradients: 4·N
        p.requires_grad_(name.startswith("classifier"))
    frozen = ModelShape.of(model)
    assert (frozen.trained, frozen.frozen) == (66, n - 66)
    assert training_flops(frozen, 8, 34) == 6 * 66 * 8 + 4 * (n - 66) * 8 + 12 * 2 * 32 * 34


def test_a_batch_is_counted_from_its_mask_on_the_host():
    mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    assert BatchCount.of({"attention_mask": mask}) == BatchCount(2, 5, 8, 34)
    choices = torch.stack([mask, mask])  # multiple choice: [examples, choices, length], each choice a sequence
    assert BatchCount.of({"attention_mask": choices}) == BatchCount(4, 5, 16, 68)
    meter = TokenMeter()
    meter.stacked([{"attention_mask": mask}, {"attention_mask": torch.tensor([[1, 1, 0, 0]])}])  # padded to the longest
    assert meter.counted() == [BatchCount(3, 5, 10, 38)]


def _expected(features, seed: int, epochs: int, batch: int) -> tuple[int, int, set[int]]:
    """(real tokens, processed tokens, padded lengths) of dynamically padded epochs in the run's batch order."""
    real = processed = 0
    lengths = set()
    sampler = EpochSeededSampler(len(features), seed)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        order = list(sampler)
        for start in range(0, len(order), batch):
            rows = [len(features[i]["input_ids"]) for i in order[start:start + batch]]
            real, processed = real + sum(rows), processed + len(rows) * max(rows)
            lengths.add(max(rows))
    return real, processed, lengths


def _check_fields(timings: dict, environment: dict) -> None:
    for field in FIELDS:
        assert field in timings and field in environment["throughput"]
    assert 0 < timings["mfu"] <= 1
    assert 0 <= timings["padding_fraction"] < 1
    assert timings["tokens_per_second"] == pytest.approx(timings["train_tokens"] / timings["train_seconds"], rel=0.05)
    assert environment["throughput"]["peak_flops_source"]
    assert environment["implementation"]["padding"] == "dynamic"


def test_a_sequential_run_records_what_its_batches_held(tiny_bert, data_dir):
    spec = RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(42), hparams=SMALL)
    result = finetune.run(spec, data_dir)
    prepared = finetune.prepare(spec, data_dir)
    real, processed, lengths = _expected(prepared.train_features, 42, 2, 8)
    t = result.timings
    _check_fields(t, result.environment)
    assert (t["train_tokens"], t["processed_tokens"], t["padded_shapes"]) == (real, processed, len(lengths))
    assert t["padding_fraction"] == pytest.approx(1 - real / processed)
    assert t["model_flops_per_second"] == pytest.approx(t["mfu"] * t["peak_flops"])


def test_a_run_stopped_by_max_steps_counts_only_the_batches_it_trained_on(tiny_bert, data_dir):
    spec = RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(3), hparams={**SMALL, "max_steps": 3})
    result = finetune.run(spec, data_dir)
    prepared = finetune.prepare(spec, data_dir)
    sampler = EpochSeededSampler(len(prepared.train_features), 3)
    first = list(sampler)[:24]  # three batches of 8; the data loader collated a fourth ahead
    assert result.timings["train_tokens"] == sum(len(prepared.train_features[i]["input_ids"]) for i in first)


def test_a_fused_group_records_the_whole_groups_throughput(tiny_bert, data_dir):
    specs = [RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(s), hparams=SMALL) for s in (1, 2)]
    outcomes = fused.run_group(specs, data_dir)
    features = finetune.prepare(specs[0], data_dir).train_features
    member_tokens = 2 * sum(len(f["input_ids"]) for f in features)  # every example twice (two epochs), per member
    for outcome in outcomes:
        _check_fields(outcome.timings, outcome.environment)
        assert outcome.timings["train_tokens"] == 2 * member_tokens
        assert math.isclose(outcome.timings["mfu"], outcomes[0].timings["mfu"])
