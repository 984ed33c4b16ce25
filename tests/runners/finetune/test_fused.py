"""Fused seeds on a tiny random BERT: each member trains as its sequential run does, and fails alone."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pandas as pd
import pytest
import torch

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune import fused, fused_training
from seedscope.runners.finetune import runner as finetune
from seedscope.runners.finetune.features import collator
from seedscope.runners.finetune.trainer import SeededTrainer

#: 64 training sentences in batches of 8: 8 batches an epoch, so 20 steps cross two epochs' reshuffles
FIDELITY = {"max_train_examples": 64, "max_eval_examples": 200, "max_steps": 20, "per_device_train_batch_size": 8,
            "max_seq_length": 64, "learning_rate": 1e-3, "weight_decay": 0.01, "warmup_ratio": 0.1}
#: three members with their own seeds, one of them with every factor on a different seed
SEEDS = (FactorSeeds.tied(1), FactorSeeds.tied(2), FactorSeeds.tied(3).replace(data_order=7, model_init=11))


@pytest.fixture(scope="module")
def still_bert(tiny_bert, tmp_path_factory):
    """The tiny BERT without dropout: fused and sequential runs then compute the same thing."""
    folder = tmp_path_factory.mktemp("still-bert")
    shutil.copytree(tiny_bert, folder, dirs_exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (folder / "config.json").write_text(json.dumps(config))
    return folder


def _specs(model, hparams, seeds=SEEDS, task="sst2"):
    return [RunSpec(task, str(model), s, hparams=hparams) for s in seeds]


def _sequential_losses(monkeypatch, spec, data_dir):
    """A sequential run and the loss of each of its training batches."""
    losses = []
    original = SeededTrainer.training_step

    def recording(self, *args, **kwargs):
        loss = original(self, *args, **kwargs)
        losses.append(float(loss))
        return loss

    monkeypatch.setattr(SeededTrainer, "training_step", recording)
    result = finetune.run(spec, data_dir)
    monkeypatch.setattr(SeededTrainer, "training_step", original)
    return result, losses


def _fused_losses(monkeypatch, specs, data_dir):
    """A fused group and each member's loss on each of its training batches (``[batches, K]``; the members of a
    batch pass in order, all at once or a few at a time)."""
    losses = []
    original = fused_training.FusedModel.losses

    def recording(self, *args, **kwargs):
        values = original(self, *args, **kwargs)
        losses.extend(values.detach().double().tolist())
        return values

    monkeypatch.setattr(fused_training.FusedModel, "losses", recording)
    outcomes = fused.run_group(specs, data_dir)
    monkeypatch.setattr(fused_training.FusedModel, "losses", original)
    return outcomes, np.array(losses).reshape(-1, len(specs))


@pytest.mark.parametrize("hparams, batches", [
    (FIDELITY, 20),
    ({**FIDELITY, "max_steps": 8, "gradient_accumulation_steps": 3}, 22),  # steps of 3, 3, 2 batches an epoch: 8 + 8 + 6
], ids=["20 steps", "accumulation of 3"])
def test_each_member_trains_and_predicts_as_its_sequential_run(still_bert, data_dir, monkeypatch, hparams, batches):
    specs = _specs(still_bert, hparams)
    outcomes, fused_losses = _fused_losses(monkeypatch, specs, data_dir)
    for k, spec in enumerate(specs):
        alone, losses = _sequential_losses(monkeypatch, spec, data_dir)
        member = outcomes[k]
        assert len(losses) == len(fused_losses) == batches
        assert np.abs(fused_losses[:, k] - losses).max() < 1e-4
        agree = (member.predictions["prediction"] == alone.predictions["prediction"]).mean()
        assert agree >= 0.99
        assert member.metrics["train_loss"] == pytest.approx(alone.metrics["train_loss"], abs=1e-4)
        assert member.metrics["eval_loss"] == pytest.approx(alone.metrics["eval_loss"], abs=1e-3)
        assert member.timings["optimizer_steps"] == alone.timings["optimizer_steps"]
        # the store gets the same table: columns, dtypes, example order
        assert list(member.predictions.columns) == list(alone.predictions.columns)
        assert (member.predictions.dtypes == alone.predictions.dtypes).all()
        assert member.predictions["example_id"].tolist() == alone.predictions["example_id"].tolist()
        assert set(member.metrics) == set(alone.metrics)
        assert member.environment["execution"] == "fused" and alone.environment["execution"] == "sequential"
        assert (member.environment["fused_members"], member.environment["fused_member"]) == (len(specs), k)
        assert member.environment["seeds"] == spec.seeds.to_dict()


def test_a_diverging_member_fails_alone_and_the_others_are_unchanged(still_bert, data_dir, monkeypatch):
    hparams = {**FIDELITY, "max_steps": 6, "max_eval_examples": 40}
    specs = _specs(still_bert, hparams)
    calm = fused.run_group(specs, data_dir)
    original, calls = fused_training.FusedModel.losses, []

    def diverging(self, *args, **kwargs):  # member 1's loss turns NaN on its third batch
        values = original(self, *args, **kwargs)
        calls.append(1)
        if len(calls) >= 3:
            values = values * torch.tensor([1.0, float("nan"), 1.0])
        return values

    monkeypatch.setattr(fused_training.FusedModel, "losses", diverging)
    outcomes = fused.run_group(specs, data_dir)
    assert isinstance(outcomes[1], SeedscopeError)
    assert "training diverged" in str(outcomes[1]) and "optimiser step 3" in str(outcomes[1])
    for k in (0, 2):
        pd.testing.assert_frame_equal(outcomes[k].predictions, calm[k].predictions, check_exact=True)


def test_with_dropout_each_member_trains_as_its_sequential_run_given_the_same_masks(tiny_bert, data_dir, monkeypatch):
    """Dropout on: the sequential runs drop what their members drop (each batch under the member's own masks), so
    fused and sequential training must agree as closely as without dropout — whatever differs between the two with
    torch's own masks is then the masks' draw alone."""
    from seedscope.runners.finetune.fused_dropout import MemberDropout, member_key

    specs = _specs(tiny_bert, FIDELITY)
    outcomes, fused_losses = _fused_losses(monkeypatch, specs, data_dir)
    original = SeededTrainer.compute_loss
    for k, spec in enumerate(specs):
        batches = []

        def masked(self, *args, seed=spec.seeds.optimisation, batches=batches, **kwargs):
            with MemberDropout(member_key(torch.tensor(seed), len(batches))):
                batches.append(1)
                return original(self, *args, **kwargs)

        monkeypatch.setattr(SeededTrainer, "compute_loss", masked)
        alone, losses = _sequential_losses(monkeypatch, spec, data_dir)
        assert np.abs(fused_losses[:, k] - losses).max() < 1e-4
        assert (outcomes[k].predictions["prediction"] == alone.predictions["prediction"]).mean() >= 0.99
    monkeypatch.setattr(SeededTrainer, "compute_loss", original)


#: LoRA without dropout on every projection of a decoder; its head (``score``) trains in full
STILL_LORA = {**FIDELITY, "lora_r": 4, "lora_dropout": 0.0, "learning_rate": 5e-3,
              "lora_target_modules": ["q_proj", "k_proj", "v_proj", "o_proj"]}


def _lora_fidelity(model, hparams, data_dir, monkeypatch, seeds=SEEDS):
    specs = [RunSpec("sst2", str(model), s, "lora", hparams) for s in seeds]
    outcomes, fused_losses = _fused_losses(monkeypatch, specs, data_dir)
    for k, spec in enumerate(specs):
        alone, losses = _sequential_losses(monkeypatch, spec, data_dir)
        member = outcomes[k]
        assert len(losses) == len(fused_losses) == hparams["max_steps"]
        assert np.abs(fused_losses[:, k] - losses).max() < 1e-4
        assert (member.predictions["prediction"] == alone.predictions["prediction"]).mean() >= 0.99
        assert member.metrics["eval_loss"] == pytest.approx(alone.metrics["eval_loss"], abs=1e-3)
        assert (member.environment["execution"], member.environment["method"]) == ("fused", "lora")
    return outcomes


def test_each_lora_member_trains_and_predicts_as_its_sequential_run(tiny_smollm2, data_dir, monkeypatch):
    """On a decoder shaped as SmolLM2 (grouped-query attention, tied embeddings, a config pad id the tokenizer does
    not pad with)."""
    outcomes = _lora_fidelity(tiny_smollm2, STILL_LORA, data_dir, monkeypatch)
    assert len({tuple(o.predictions["prob_positive"].round(6)) for o in outcomes}) == 3  # three different members


def test_lora_members_passing_a_few_at_a_time_train_and_predict_as_their_sequential_runs(tiny_llama, data_dir,
                                                                                          monkeypatch):
    outcomes = _lora_fidelity(tiny_llama, {**STILL_LORA, "fused_chunk": 2}, data_dir, monkeypatch)  # passes of 2, 1
    assert [o.environment["fused_per_pass"] for o in outcomes] == [2, 2, 2]


def test_a_pass_keeps_its_own_members_activations_alone_and_each_members_loss_and_gradients(tiny_llama, data_dir):
    """Three members one at a time keep a third of what three at once keep for the backward pass (the bytes autograd
    saves, beyond the weights), with the same losses and gradients."""
    specs = [RunSpec("sst2", str(tiny_llama), s, "lora", STILL_LORA) for s in SEEDS]
    prepared = [finetune.prepare(spec, data_dir) for spec in specs]
    tokenizer = prepared[0].tokenizer
    collate = collator(prepared[0].kind, tokenizer, prepared[0].settings)
    rows = prepared[0].train_features[:8]
    found = {}
    for per_pass in (3, 1):
        group = fused_training.FusedModel([finetune.fresh_model(s, p) for s, p in zip(specs, prepared)], "cpu", per_pass)
        weights = {t.untyped_storage().data_ptr() for t in [*group.params.values(), *group.shared.values()]}
        saved, losses = [], group.loss_pass

        def keep(tensor):
            if tensor.untyped_storage().data_ptr() not in weights:
                saved[-1] += tensor.numel() * tensor.element_size()
            return tensor

        def counted(*args, **kwargs):
            saved.append(0)
            with torch.autograd.graph.saved_tensors_hooks(keep, lambda tensor: tensor):
                return losses(*args, **kwargs)

        group.loss_pass = counted
        values = group.backward([collate(rows)] * 3, tokenizer, torch.tensor([1, 2, 3]), torch.full((3,), 8), 0, 1,
                                "fp32")
        found[per_pass] = saved, values, {name: p.grad for name, p in group.params.items()}
    (one, one_losses, one_grads), (three, three_losses, three_grads) = found[1], found[3]
    assert len(one) == 3 and len(three) == 1
    assert max(one) == pytest.approx(three[0] / 3, rel=0.02)
    assert len(set(three_losses.tolist())) == 3  # three different members
    torch.testing.assert_close(one_losses, three_losses, atol=1e-6, rtol=0)
    for name, grad in three_grads.items():
        torch.testing.assert_close(one_grads[name], grad, atol=1e-6, rtol=1e-5)


def _holds_one_base(model_folder, data_dir) -> None:
    """K adapters over one base: the fused model holds the base once, and K adapters and heads."""
    specs = [RunSpec("sst2", str(model_folder), s, "lora", STILL_LORA) for s in SEEDS]
    prepared = [finetune.prepare(spec, data_dir) for spec in specs]
    models = [finetune.fresh_model(spec, p) for spec, p in zip(specs, prepared)]
    model = fused_training.FusedModel(models, "cpu")

    def size(tensors):
        return sum(t.numel() for t in tensors)

    own = {name: p for name, p in models[0].named_parameters() if name in model.params}
    base = size(p for name, p in models[0].named_parameters() if name not in own)
    assert all("base_layer" in name or "lora_" not in name for name in model.shared)
    assert size(model.shared.values()) >= base  # the frozen base, once (and the shared buffers)
    assert size(model.params.values()) == len(models) * size(own.values()) < base  # one adapter and head per member
    assert all(name.split(".")[-3] in ("lora_A", "lora_B") or "score" in name for name in model.params)
    first = dict(models[0].named_parameters())
    assert all(t.data_ptr() == first[name].data_ptr() for name, t in model.shared.items() if name in first)


def test_lora_members_share_one_frozen_base(tiny_llama, data_dir):
    _holds_one_base(tiny_llama, data_dir)


@pytest.mark.slow
def test_each_lora_member_of_the_real_smollm2_trains_and_predicts_as_its_sequential_run(smollm2_folder, data_dir,
                                                                                     monkeypatch):
    # a usual LoRA rate (see docs/how-to/gpus.md); 16 examples in batches of 8: 6 steps cross two epochs' reshuffles, as the
    # tiny decoder's 20 do, at a third of the 20 steps' time (the fused pass is checked at every step either way)
    hparams = {**STILL_LORA, "learning_rate": 1e-4, "max_train_examples": 16, "max_steps": 6, "max_eval_examples": 64}
    _lora_fidelity(smollm2_folder, hparams, data_dir, monkeypatch, seeds=SEEDS[1:])  # two members: the suite's time
    _holds_one_base(smollm2_folder, data_dir)


def test_what_fusing_cannot_match_is_refused(tiny_bert, data_dir):
    for hparams, method, words in [({"group_by_length": True}, "full", "group_by_length"),
                                   ({"group_by_length": True}, "lora", "group_by_length")]:
        with pytest.raises(SeedscopeError, match=words):
            fused.run_group([RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(1), method, hparams)], data_dir)
    with pytest.raises(SeedscopeError, match="differ in more than their seeds"):
        fused.run_group([RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(1), hparams={"learning_rate": 1e-3}),
                         RunSpec("sst2", str(tiny_bert), FactorSeeds.tied(2), hparams={"learning_rate": 1e-4})],
                        data_dir)
    with pytest.raises(SeedscopeError, match="multiple-choice"):
        fused.run_group(_specs(tiny_bert, {"max_train_examples": 8, "max_steps": 1}, task="copa")[:2], data_dir)


@pytest.mark.slow
def test_with_dropout_eight_fused_seeds_and_eight_sequential_ones_are_statistically_indistinguishable(data_dir):
    """Dropout masks differ (fused members draw their own), so the check is seedscope's own comparison of the two.

    The tiny random BERT learns nothing of SST-2 in a few steps (every run scores the majority class), so this runs
    the real MiniLM, which does (accuracies 0.53-0.70 over 200 sentences): 8 seeds each way, paired by seed, 16
    steps (docs/how-to/gpus.md gives the figures). Eight pairs still reach a sign-flip p of 2/256.
    """
    from seedscope.analysis.compare import compare_sweeps
    from seedscope.config import resolve_model

    hparams = {"max_train_examples": 128, "max_eval_examples": 200, "num_train_epochs": 2,
               "per_device_train_batch_size": 16, "max_seq_length": 48, "learning_rate": 1e-4}
    specs = _specs(resolve_model("all-minilm-l6-v2"), hparams, seeds=[FactorSeeds.tied(seed) for seed in range(1, 9)])
    sequential = pd.concat([finetune.run(spec, data_dir).predictions for spec in specs])
    fused_table = pd.concat([member.predictions for member in fused.run_group(specs, data_dir)])
    assert not np.allclose(fused_table["prob_positive"], sequential["prob_positive"])  # other dropout masks
    comparison = compare_sweeps({"sequential": sequential, "fused": fused_table}, n_boot=2000, n_permutations=1999)
    pair = comparison.pairs.iloc[0]
    assert pair["paired"] and pair["n_matched"] == 8
    assert pair["p_permutation"] > 0.05 and pair["p_wilcoxon"] > 0.05


def test_cuda_graphs_are_refused_without_fixed_shapes_or_a_torch_that_keeps_their_gradients(monkeypatch):
    """What a CPU can check of ``cuda_graphs: true`` (the GPU itself is refused in tests/cli/test_fuse.py)."""
    from seedscope.plan.hparams import FinetuneSettings
    from seedscope.runners.finetune import folded_attention

    monkeypatch.setattr(fused, "compute_device", lambda device: torch.device("cuda"))  # as on a GPU machine
    monkeypatch.setattr(folded_attention, "compiled_fold_works", lambda: True)  # torch 2.13's behaviour
    with pytest.raises(SeedscopeError, match="padding: dynamic pads every batch to its own length"):
        fused.check_graphs(FinetuneSettings(cuda_graphs=True, padding="dynamic"))
    fused.check_graphs(FinetuneSettings(cuda_graphs=True))  # padding auto: buckets on a GPU
    fused.check_graphs(FinetuneSettings(cuda_graphs=True, padding="max_length"))
    monkeypatch.setattr(folded_attention, "compiled_fold_works", lambda: False)  # torch 2.5's behaviour
    with pytest.raises(SeedscopeError, match="compiled vmap rules keep gradients"):
        fused.check_graphs(FinetuneSettings(cuda_graphs=True))
    assert fused.graph_options(FinetuneSettings(cuda_graphs=True)) == {"backend": "cudagraphs"}
    assert fused.graph_options(FinetuneSettings()) is None
