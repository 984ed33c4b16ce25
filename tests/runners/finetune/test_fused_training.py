"""The fused loop reads nothing from the device inside its steps, and records the losses it recorded before."""

from __future__ import annotations

import math

import pytest
import torch

from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune import fused, fused_training
from seedscope.runners.finetune.folded_attention import compiled_fold_works
from seedscope.runners.finetune.fused_training import masks_without_reads
from seedscope.runners.finetune.host_reads import HostReads

#: 64 sentences in batches of 8, 20 optimiser steps: two epochs' reshuffles, one of them accumulating 3 batches a step
HPARAMS = {"max_train_examples": 64, "max_eval_examples": 16, "max_steps": 20, "per_device_train_batch_size": 8,
           "max_seq_length": 64, "learning_rate": 1e-3}


def _trained(model, hparams, data_dir, monkeypatch, alter=None):
    """A fused group of three seeds: its ``Trained``, each micro-batch's losses (copies, read after training), and
    the host reads of the training loop."""
    specs = [RunSpec("sst2", str(model), FactorSeeds.tied(seed), hparams=hparams) for seed in (1, 2, 3)]
    original_losses, original_train = fused_training.FusedModel.losses, fused.train_members
    batches, kept = [], {}

    def losses(self, *args, **kwargs):
        values = original_losses(self, *args, **kwargs)
        values = alter(values, len(batches)) if alter else values
        batches.append(values.detach().clone())
        return values

    def train(*args, **kwargs):
        with HostReads() as reads:
            kept["trained"] = original_train(*args, **kwargs)
        kept["reads"] = reads
        return kept["trained"]

    monkeypatch.setattr(fused_training.FusedModel, "losses", losses)
    monkeypatch.setattr(fused, "train_members", train)
    outcomes = fused.run_group(specs, data_dir)
    return outcomes, kept["trained"], torch.stack(batches).double().tolist(), kept["reads"]


@pytest.mark.parametrize("accumulation", [1, 3])
def test_the_loop_reads_the_device_at_most_once_in_ten_steps_and_records_the_same_losses(tiny_bert, data_dir,
                                                                                         monkeypatch, accumulation):
    hparams = {**HPARAMS, "gradient_accumulation_steps": accumulation}
    outcomes, trained, batches, reads = _trained(tiny_bert, hparams, data_dir, monkeypatch)
    assert trained.steps == 20 and reads.ops > 0
    # on a CPU every scalar read counts, of any tensor: the one read at the end is all there is (before 5.15,
    # transformers cannot be told to make an encoder's mask without reading it: once a batch)
    if masks_without_reads():
        assert reads.scalar_reads / trained.steps <= 0.1
    # each member's mean loss, summed on the host in float64 as the loop summed it before it kept it on the device
    for k, outcome in enumerate(outcomes):
        expected = math.fsum(batch[k] for batch in batches) / trained.steps
        assert trained.losses[k] == pytest.approx(expected, abs=1e-6)
        assert outcome.metrics["train_loss"] == pytest.approx(expected, abs=1e-6)
    assert trained.diverged == {}


def test_a_diverged_member_is_recorded_at_its_step_with_its_value(tiny_bert, data_dir, monkeypatch):
    """Member 1's loss turns infinite on micro-batch 7 (optimiser step 3 of steps of 3, 3, 2 batches): the step, the
    value, and a mean of what it had before are recorded; the others count every batch."""
    def alter(values, index):
        return values * torch.tensor([1.0, math.inf, 1.0]) if index == 6 else values

    hparams = {**HPARAMS, "max_steps": 4, "gradient_accumulation_steps": 3}
    _, trained, batches, _ = _trained(tiny_bert, hparams, data_dir, monkeypatch, alter)
    assert trained.diverged == {1: (3, math.inf)}
    assert trained.losses[1] == pytest.approx(math.fsum(batch[1] for batch in batches[:6]) / 4, abs=1e-6)
    assert trained.losses[0] == pytest.approx(math.fsum(batch[0] for batch in batches) / 4, abs=1e-6)


@pytest.mark.parametrize("model, method", [("tiny_bert", "full"), ("tiny_llama", "lora")])
def test_a_fused_step_hits_no_vmap_fallback(request, data_dir, model, method):
    """vmap falls back to a loop over the members where an operation has no batching rule (attention's backward on
    a GPU, pytorch#117016): with its warning on, a fused encoder's and a fused LoRA decoder's steps raise none."""
    import warnings

    hparams = {**HPARAMS, "max_train_examples": 16, "max_steps": 2, **({"lora_r": 4} if method == "lora" else {})}
    specs = [RunSpec("sst2", str(request.getfixturevalue(model)), FactorSeeds.tied(seed), method, hparams)
             for seed in (1, 2)]
    torch._C._functorch._set_vmap_fallback_warning_enabled(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcomes = fused.run_group(specs, data_dir)
            torch.vmap(lambda x: torch.renorm(x, 2, 0, 1.0))(torch.ones(2, 2, 2))  # the warning works: renorm has no rule
    finally:
        torch._C._functorch._set_vmap_fallback_warning_enabled(False)
    assert all(outcome.timings["optimizer_steps"] == 2 for outcome in outcomes)
    fallbacks = [str(w.message) for w in caught if "batching rule" in str(w.message)]
    assert len(fallbacks) == 1 and "aten::renorm" in fallbacks[0]


def test_one_fused_optimiser_steps_every_member(tiny_bert, tmp_path):
    """The members' weights are stacked, so one optimiser (the Trainer's: fused AdamW by default in recent
    transformers) holds one tensor per weight of the model whatever the group's size, and its single step updates
    every member."""
    from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

    models = [AutoModelForSequenceClassification.from_pretrained(tiny_bert) for _ in range(4)]
    group = fused_training.FusedModel(models, torch.device("cpu"))
    args = TrainingArguments(str(tmp_path), learning_rate=1e-2)
    optimizer = fused_training.optimiser(models, group.params, args)
    held = [p for param_group in optimizer.param_groups for p in param_group["params"]]
    assert len(held) == sum(1 for p in models[0].parameters() if p.requires_grad)
    assert all(p.shape[0] == 4 for p in held)
    assert optimizer.defaults.get("fused") == Trainer.get_optimizer_cls_and_kwargs(args, models[0])[1].get("fused")
    before = {id(p): p.detach().clone() for p in held}
    for p in held:
        p.grad = torch.ones_like(p)
    optimizer.step()
    assert all(not torch.equal(p[k], before[id(p)][k]) for p in held for k in range(4))


@pytest.mark.skipif(not compiled_fold_works(), reason="this torch loses gradients through a custom vmap rule")
@pytest.mark.parametrize("model, method", [("tiny_bert", "full"), ("tiny_llama", "lora")])
def test_a_compiled_loss_pass_is_one_graph_that_trains_as_before(request, data_dir, monkeypatch, model, method):
    """``cuda_graphs: true`` compiles the loss pass as one graph, which a GPU replays as a CUDA graph. Here it is traced
    with the ``aot_eager`` backend (the same graph, run without the capture): the members train as uncompiled
    (losses and predictions), through the same graph for every step and pass (no recompiling per micro-batch or per
    member), and vmap loops over no member."""
    import warnings

    hparams = {**HPARAMS, "max_train_examples": 32, "max_steps": 6, "padding": "max_length", "max_seq_length": 32,
               **({"lora_r": 4, "fused_chunk": 1} if method == "lora" else {})}
    specs = [RunSpec("sst2", str(request.getfixturevalue(model)), FactorSeeds.tied(seed), method, hparams)
             for seed in (1, 2, 3)]
    plain = fused.run_group(specs, data_dir)
    monkeypatch.setattr(fused, "graph_options", lambda settings: {"backend": "aot_eager"})
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    torch._C._functorch._set_vmap_fallback_warning_enabled(True)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            compiled = fused.run_group(specs, data_dir)
    finally:
        torch._C._functorch._set_vmap_fallback_warning_enabled(False)
    # 6 steps (× 3 passes of one LoRA member): one graph, and one more after the first call, whose head sets its
    # config's problem_type (a guard of the first graph)
    assert torch._dynamo.utils.counters["stats"]["unique_graphs"] <= 2
    assert not [w for w in caught if "batching rule" in str(w.message)]
    for before, after in zip(plain, compiled):
        assert after.metrics["train_loss"] == pytest.approx(before.metrics["train_loss"], abs=1e-6)
        assert after.predictions["prediction"].tolist() == before.predictions["prediction"].tolist()


@pytest.mark.parametrize("model, method", [("tiny_bert", "full"), ("tiny_llama", "lora")])
def test_a_fused_pass_dispatches_the_same_operations_whatever_the_number_of_members(request, data_dir, model, method):
    """One batched matrix product per linear layer and one attention call for all members: the forward and backward
    of a pass of 3 members dispatch the products, attention and normalisation calls of a pass of one, and within 1 %
    as many operations in all."""
    import collections

    from torch.utils._python_dispatch import TorchDispatchMode

    from seedscope.runners.finetune import runner as finetune
    from seedscope.runners.finetune.features import collator

    class Count(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = collections.Counter()

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops[str(func.overloadpacket)] += 1
            return func(*args, **(kwargs or {}))

    hparams = {**HPARAMS, **({"lora_r": 4} if method == "lora" else {})}
    counted = {}
    for members in (1, 3):
        specs = [RunSpec("sst2", str(request.getfixturevalue(model)), FactorSeeds.tied(seed), method, hparams)
                 for seed in range(1, members + 1)]
        prepared = [finetune.prepare(spec, data_dir) for spec in specs]
        group = fused_training.FusedModel([finetune.fresh_model(s, p) for s, p in zip(specs, prepared)], "cpu")
        batch = collator(prepared[0].kind, prepared[0].tokenizer, prepared[0].settings)(prepared[0].train_features[:8])
        original, count = group.loss_pass, Count()

        def pass_counted(*args, **kwargs):  # counted from the pass on, through its backward
            count.__enter__()
            return original(*args, **kwargs)

        group.loss_pass = pass_counted
        try:
            group.backward([batch] * members, prepared[0].tokenizer, torch.arange(members), torch.full((members,), 8),
                           0, 1, "fp32")
        finally:
            count.__exit__(None, None, None)
        counted[members] = count.ops
    products = ("aten.bmm", "aten.mm", "aten.addmm", "aten.baddbmm", "aten._scaled_dot_product_flash_attention_for_cpu",
                "aten._scaled_dot_product_flash_attention_for_cpu_backward", "aten._softmax", "aten.native_layer_norm")
    assert counted[1]["aten.bmm"] > 0 and all(counted[3][op] == counted[1][op] for op in products)
    assert sum(counted[3].values()) <= 1.01 * sum(counted[1].values())  # vmap's rules reshape a little differently
