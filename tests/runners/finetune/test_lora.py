"""LoRA on a decoder (tiny random Llama; one slow test on the real SmolLM2): what trains, what each seed
changes, and the frozen base shared by every run of a process instead of copied."""

from __future__ import annotations

import pytest
import torch

from seedscope.plan import FactorSeeds, RunSpec
from seedscope.runners.finetune import runner as finetune
from seedscope.runners.finetune.base_weights import checkpoint_tensors, shared_base_model
from seedscope.runners.finetune.models import HEAD_MODULES

SMALL = {"max_train_examples": 32, "max_eval_examples": 16, "num_train_epochs": 1, "per_device_train_batch_size": 8,
         "max_seq_length": 48, "learning_rate": 5e-3, "lora_r": 4, "lora_dropout": 0.1}
_LOAD_MODEL = finetune.load_model


class Models:
    """Keeps every model the runner builds, with its parameters as they started."""

    def __init__(self, monkeypatch):
        self.built: list[tuple[torch.nn.Module, dict[str, torch.Tensor]]] = []

        def keep(*args, **kwargs):
            model = _LOAD_MODEL(*args, **kwargs)
            self.built.append((model, {n: p.detach().clone() for n, p in model.named_parameters()}))
            return model

        monkeypatch.setattr(finetune, "load_model", keep)


def run(model, data_dir, seeds=FactorSeeds.tied(3), task="sst2", **hparams):
    return finetune.run(RunSpec(task, str(model), seeds, method="lora", hparams={**SMALL, **hparams}), data_dir)


def base_weight(model) -> torch.Tensor:
    return next(p for n, p in model.named_parameters() if "q_proj.base_layer.weight" in n)


def test_only_the_adapter_and_the_head_train(monkeypatch, tiny_llama, data_dir):
    models = Models(monkeypatch)
    result = run(tiny_llama, data_dir)
    model, initial = models.built[0]
    changed = {n for n, p in model.named_parameters() if not torch.equal(p.detach(), initial[n])}
    assert changed and all("lora_" in n or "score" in n for n in changed)
    assert {n for n, p in model.named_parameters() if p.requires_grad} >= changed
    assert result.environment["model_kind"] == "sequence" and result.predictions["example_id"].nunique() == 16


def test_runs_of_a_process_share_one_frozen_base_and_stay_bit_identical(monkeypatch, tiny_llama, data_dir):
    models = Models(monkeypatch)
    first = run(tiny_llama, data_dir)
    run(tiny_llama, data_dir, FactorSeeds.tied(4))
    again = run(tiny_llama, data_dir)
    weights = [base_weight(model) for model, _ in models.built]
    assert len({w.data_ptr() for w in weights}) == 1  # one copy of the base for all three runs
    assert torch.equal(weights[0], models.built[0][1][next(n for n in models.built[0][1] if "q_proj.base_layer" in n)])
    assert first.predictions.equals(again.predictions)  # training never wrote into the shared base


def test_each_seed_changes_only_its_factor(monkeypatch, tiny_llama, data_dir):
    models = Models(monkeypatch)
    seeds = FactorSeeds.tied(3)
    base = run(tiny_llama, data_dir, seeds)
    for factor in ("model_init", "data_order", "optimisation"):
        run(tiny_llama, data_dir, seeds.replace(**{factor: 9}))
    (_, start), *others = models.built
    init_changed = [{n for n in start if not torch.equal(start[n], other[n])} for _, other in others]
    assert init_changed[0] and all("lora_A" in n or "score" in n for n in init_changed[0])  # model_init: adapter + head
    assert init_changed[1] == set() and init_changed[2] == set()  # data_order, optimisation: same start
    assert base.environment["seeds"]["model_init"] == 3


def test_the_shared_model_computes_what_from_pretrained_computes(tiny_llama):
    from transformers import AutoConfig, AutoModelForSequenceClassification

    config = AutoConfig.from_pretrained(tiny_llama, num_labels=2)
    torch.manual_seed(0)
    shared = shared_base_model(AutoModelForSequenceClassification, str(tiny_llama), config, HEAD_MODULES)
    plain = AutoModelForSequenceClassification.from_pretrained(tiny_llama, num_labels=2, dtype=torch.float32)
    plain.score.weight.data.copy_(shared.score.weight.data)
    ids = torch.tensor([[5, 17, 40, 3, 9]])
    torch.testing.assert_close(shared.eval()(input_ids=ids).logits, plain.eval()(input_ids=ids).logits)
    assert checkpoint_tensors.cache_info().currsize == 1


@pytest.mark.slow
def test_real_smollm2_lora_trains_for_a_few_steps(smollm2_folder, data_dir):
    result = run(smollm2_folder, data_dir, max_steps=3, max_train_examples=24, max_eval_examples=16,
                 learning_rate=1e-3, lora_target_modules=["q_proj", "v_proj"])
    assert result.timings["optimizer_steps"] == 3 and len(result.predictions) == 16
    copa = run(smollm2_folder, data_dir, task="copa", max_steps=2, max_train_examples=8, max_eval_examples=8,
               per_device_train_batch_size=4, lora_target_modules=["q_proj", "v_proj"])
    assert copa.environment["model_kind"] == "choice_lm" and set(copa.predictions["prediction"]) <= {"choice1", "choice2"}
