"""Length buckets: few padded lengths, the same batches, the same predictions as dynamic padding."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer
from transformers import BertConfig, BertModel, PreTrainedTokenizerFast

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.hparams import FinetuneSettings
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune import runner as finetune
from seedscope.runners.finetune.features import collator
from seedscope.runners.finetune.padding import RUNGS, BucketPadding, bucket_ladder

#: dropout off: padding then changes nothing but rounding (with dropout on, the masks are drawn over the padded
#: shape, so buckets draw other masks than dynamic padding: docs/reference/config.md)
STILL = {"hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}
HPARAMS = {"max_train_examples": 32, "max_eval_examples": 40, "num_train_epochs": 1, "per_device_train_batch_size": 8,
           "per_device_eval_batch_size": 16, "max_seq_length": 128, "learning_rate": 1e-3}


@pytest.fixture(scope="module")
def still_bert(tiny_bert, tmp_path_factory):
    """A tiny random BERT without dropout, built here with the shared fixture's real-text tokenizer."""
    folder = tmp_path_factory.mktemp("padding-bert")
    tokenizer = PreTrainedTokenizerFast.from_pretrained(tiny_bert)
    tokenizer.save_pretrained(folder)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=256, **STILL)
    torch.manual_seed(1)
    BertModel(config).save_pretrained(folder)
    assert isinstance(tokenizer.backend_tokenizer, Tokenizer)
    return folder


def test_the_ladder_has_few_rungs_up_to_the_longest_example():
    lengths = [12, 14, 15, 20, 22, 30, 41, 66, 9, 11]
    ladder = bucket_ladder(lengths, 128)
    assert len(ladder) <= RUNGS and list(ladder) == sorted(ladder) and ladder[-1] == 66
    assert all(r % 8 == 0 for r in ladder[:-1]) and ladder[0] >= 8
    assert bucket_ladder([300, 20, 25], 128)[-1] == 128  # never above max_seq_length
    assert bucket_ladder([7, 7, 7], 64) == (7,)


def test_a_batch_is_padded_to_its_rung_and_a_longer_one_to_its_own_length():
    seen = []

    def pad_to(length):
        return lambda features: seen.append(length) or length

    padding = BucketPadding(pad_to, (16, 24, 40), lambda features: "longest")
    assert padding([{"input_ids": [1] * 13}, {"input_ids": [1] * 5}]) == 16
    assert padding([{"input_ids": [1] * 24}]) == 24
    assert padding([{"input_ids": [1] * 41}]) == "longest"


def test_the_bucket_collator_pads_real_batches_to_the_ladder(still_bert):
    tokenizer = PreTrainedTokenizerFast.from_pretrained(still_bert)
    settings = FinetuneSettings.from_hparams({"padding": "buckets", "max_seq_length": 64})
    features = [{"input_ids": [2] + [7] * n + [3], "attention_mask": [1] * (n + 2), "labels": 0} for n in (3, 9, 20)]
    collate = collator("sequence", tokenizer, settings, [5, 11, 22, 40, 64])
    batch = collate(features)
    assert batch["input_ids"].shape[-1] in collate.ladder and batch["input_ids"].shape[-1] >= 22
    assert batch["attention_mask"].sum().item() == 5 + 11 + 22


def test_padding_is_validated_and_pad_to_max_length_is_its_alias():
    assert FinetuneSettings.from_hparams({"pad_to_max_length": True}).padding_for("cpu") == "max_length"
    assert FinetuneSettings.from_hparams({}).padding_for("cuda") == "buckets"  # auto: where each is faster
    assert FinetuneSettings.from_hparams({}).padding_for("cpu") == "dynamic"
    assert FinetuneSettings.from_hparams({"padding": "dynamic"}).padding_for("cuda") == "dynamic"
    with pytest.raises(SeedscopeError, match="hyper-parameter padding") as bad:
        FinetuneSettings.from_hparams({"padding": "bucket"})
    assert "\n" not in str(bad.value)
    with pytest.raises(SeedscopeError, match="contradicts padding: buckets"):
        FinetuneSettings.from_hparams({"pad_to_max_length": True, "padding": "buckets"})


def test_a_bad_padding_on_the_command_line_is_one_line_and_exit_2(cli, tiny_bert, data_dir, tmp_path):
    code, out, err = cli(["sweep", "--task", "sst2", "--model", str(tiny_bert), "--seeds", "1",
                          "--set", "padding=longest", "--data-dir", str(data_dir), "--out", str(tmp_path / "s")])
    assert code == 2 and "padding" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "s").exists()


@pytest.mark.parametrize("task, model, method", [
    ("sst2", "still_bert", "full"), ("rte", "still_bert", "full"),
    ("copa", "still_bert", "full"),  # a multiple-choice head: [examples, choices, length]
    ("copa", "tiny_llama", "lora"),  # a decoder scoring each choice, left-padded
])
def test_buckets_predict_as_dynamic_padding_in_fp32(request, data_dir, task, model, method):
    folder = request.getfixturevalue(model)
    runs = {padding: finetune.run(RunSpec(task, str(folder), FactorSeeds.tied(5), method,
                                          hparams={**HPARAMS, "padding": padding, "precision": "fp32",
                                                   **({"lora_dropout": 0.0} if method == "lora" else {})}), data_dir)
            for padding in ("dynamic", "buckets")}
    dynamic, buckets = runs["dynamic"], runs["buckets"]
    assert (dynamic.predictions["prediction"] == buckets.predictions["prediction"]).all()
    probabilities = [c for c in dynamic.predictions.columns if c.startswith("prob")]
    assert probabilities
    np.testing.assert_allclose(buckets.predictions[probabilities].to_numpy(float),
                               dynamic.predictions[probabilities].to_numpy(float), atol=1e-5)
    assert buckets.timings["train_tokens"] == dynamic.timings["train_tokens"]  # the same batches, only more padding
    assert buckets.timings["padded_shapes"] <= RUNGS
    assert buckets.timings["processed_tokens"] >= dynamic.timings["processed_tokens"]
    assert buckets.environment["implementation"]["padding"] == "buckets"
