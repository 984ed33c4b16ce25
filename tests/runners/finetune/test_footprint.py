"""A model's shape from its config alone matches the model itself."""

from __future__ import annotations

from transformers import AutoConfig, AutoModel

from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune.footprint import model_shape


def test_the_shape_counts_what_the_loaded_model_holds(tiny_bert):
    spec = RunSpec("rte", str(tiny_bert), FactorSeeds.tied(1), hparams={"per_device_train_batch_size": 8,
                                                                        "max_seq_length": 48})
    shape = model_shape(spec)
    model, config = AutoModel.from_pretrained(tiny_bert), AutoConfig.from_pretrained(tiny_bert)
    assert shape["parameters"] == sum(p.numel() for p in model.parameters())  # the meta-device count, independently
    assert (shape["hidden"], shape["layers"], shape["heads"]) == (config.hidden_size, config.num_hidden_layers,
                                                                   config.num_attention_heads)
    assert (shape["batch"], shape["length"]) == (8, 48)
