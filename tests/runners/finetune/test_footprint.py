"""A model's shape from its config alone matches the model itself."""

from __future__ import annotations

from transformers import AutoConfig, AutoModel

from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune.footprint import PROCESS_BYTES, fused_per_pass, members_per_pass, model_shape


def test_the_shape_counts_what_the_loaded_model_holds(tiny_bert):
    spec = RunSpec("rte", str(tiny_bert), FactorSeeds.tied(1), hparams={"per_device_train_batch_size": 8,
                                                                        "max_seq_length": 48})
    shape = model_shape(spec)
    model, config = AutoModel.from_pretrained(tiny_bert), AutoConfig.from_pretrained(tiny_bert)
    assert shape["parameters"] == sum(p.numel() for p in model.parameters())  # the meta-device count, independently
    assert (shape["hidden"], shape["layers"], shape["heads"]) == (config.hidden_size, config.num_hidden_layers,
                                                                   config.num_attention_heads)
    assert (shape["batch"], shape["length"]) == (8, 48)


def test_a_fused_lora_group_passes_as_many_members_as_keep_its_peak_within_one_and_a_half_runs():
    # SmolLM2-sized (the smollm2-lora-cpu preset): F = 4 × 134.5 M + 700 MiB = 1,272,003,200 bytes; A = 16 × 64 tokens
    # × 30 layers × (20 × 576 + 4 × 9 × 64) values × 4 bytes = 1,698,693,120 bytes; 0.5 F / A + 1.5 = 1.87: one a pass
    assert PROCESS_BYTES == 734_003_200
    assert members_per_pass(134_500_000, 16, 64, 576, 30, 9, members=4) == 1
    # half the batch: A = 849,346,560, F = 4 × 50 M + 700 MiB = 934,003,200; 0.5 F / A + 1.5 = 2.05: two a pass
    assert members_per_pass(50_000_000, 8, 64, 576, 30, 9, members=4) == 2
    # a tiny model's activations are nothing beside the process: every member at once, never more than the group
    assert members_per_pass(1_000_000, 8, 32, 64, 2, 2, members=3) == 3
    assert members_per_pass(0, 0, 32, 64, 2, 2, members=5) == 5


def test_the_runs_fused_chunk_decides_and_full_fine_tuning_passes_every_member(tiny_bert, tiny_llama):
    lora = RunSpec("sst2", str(tiny_llama), FactorSeeds.tied(1), "lora", {"max_seq_length": 64})
    assert fused_per_pass(lora, 4) == 4  # tiny: the process dominates
    assert fused_per_pass(RunSpec("sst2", str(tiny_llama), FactorSeeds.tied(1), "lora", {"fused_chunk": 1}), 4) == 1
    assert fused_per_pass(RunSpec("sst2", str(tiny_llama), FactorSeeds.tied(1), "lora", {"fused_chunk": 8}), 4) == 4
    assert fused_per_pass(RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(1), hparams={}), 6) == 6
