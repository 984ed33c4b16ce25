"""Fine-tuning runs on tiny random models (and one on the real MiniLM): factors, heads, methods."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import seedscope
from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.predictions import align_runs
from seedscope.runners.finetune import runner as finetune
from seedscope.runners.result import prediction_table
from seedscope.tasks import get_task, load_examples

SMALL = {
    "max_train_examples": 48, "max_eval_examples": 24, "num_train_epochs": 2, "per_device_train_batch_size": 8,
    "max_seq_length": 64, "learning_rate": 1e-3,
}


_LOAD_MODEL, _COLLATOR = finetune.load_model, finetune.collator


class Recorder:
    """Wraps the runner's model loader and collator to see initial weights and every batch."""

    def __init__(self, monkeypatch):
        self.initial: dict[str, torch.Tensor] = {}
        self.trainable: list[str] = []
        self.batches: list[list[tuple]] = []
        load_model, collator = _LOAD_MODEL, _COLLATOR

        def recording_load_model(*args, **kwargs):
            model = load_model(*args, **kwargs)
            self.initial = {n: p.detach().clone() for n, p in model.named_parameters()}
            self.trainable = [n for n, p in model.named_parameters() if p.requires_grad]
            return model

        def recording_collator(*args, **kwargs):
            collate = collator(*args, **kwargs)

            def collate_and_record(features):
                batch = collate(features)
                rows = [tuple(ids[mask.bool()].tolist()) for ids, mask in zip(batch["input_ids"], batch["attention_mask"])]
                self.batches.append(rows)
                return batch

            return collate_and_record

        monkeypatch.setattr(finetune, "load_model", recording_load_model)
        monkeypatch.setattr(finetune, "collator", recording_collator)

    def train_batches(self, result) -> list[list[tuple]]:
        return self.batches[: result.timings["optimizer_steps"]]


def _run(model, data_dir, seeds=FactorSeeds.tied(42), task="sst2", method="full", **hparams):
    return finetune.run(RunSpec(task, str(model), seeds, method=method, hparams={**SMALL, **hparams}), data_dir)


def _recorded(monkeypatch, model, data_dir, seeds):
    recorder = Recorder(monkeypatch)
    return _run(model, data_dir, seeds), recorder


@pytest.fixture(scope="module")
def baseline(tiny_bert, data_dir):
    return _run(tiny_bert, data_dir)


def test_same_seeds_give_bit_identical_predictions(tiny_bert, data_dir, baseline):
    again = _run(tiny_bert, data_dir)
    pd.testing.assert_frame_equal(baseline.predictions, again.predictions, check_exact=True)
    assert baseline.metrics == again.metrics
    assert baseline.environment["deterministic_algorithms"] is True
    assert baseline.environment["seeds"] == FactorSeeds.tied(42).to_dict()
    assert not torch.are_deterministic_algorithms_enabled()  # restored after the run


#: run in a fresh process (arguments: model folder, data folder, output file): STS-B first, then SST-2 on one thread
#: (setting and restoring the thread count changes the process's thread state), then STS-B again
_FIRST_AND_AFTER_ANOTHER = """
import pickle, sys
from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune import runner
model, data_dir, out = sys.argv[1:]
hparams = {"max_train_examples": 48, "max_eval_examples": 24, "max_steps": 4, "per_device_train_batch_size": 8,
           "max_seq_length": 64, "learning_rate": 1e-3}
def run(task, **settings):
    result = runner.run(RunSpec(task, model, FactorSeeds.tied(42), hparams={**hparams, **settings}), data_dir)
    return result.predictions, {name: result.metrics[name] for name in ("train_loss", "eval_loss")}
first = run("stsb")
run("sst2", threads=1)
with open(out, "wb") as file:
    pickle.dump((first, run("stsb")), file)
"""


def test_a_run_predicts_the_same_first_in_its_process_and_after_another_run(tiny_bert, data_dir, tmp_path):
    """What a process ran before a run changes nothing in it (packed workers run many runs each): a fresh process —
    this one has run other tests — runs STS-B first and again after an SST-2 run, bit-identically (the same
    predictions from the same seeds at the same thread count; see docs/how-to/sweep.md#determinism)."""
    source = str(Path(seedscope.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [source, os.environ.get("PYTHONPATH")]))}
    out = tmp_path / "runs.pkl"
    done = subprocess.run([sys.executable, "-c", _FIRST_AND_AFTER_ANOTHER, str(tiny_bert), str(data_dir), str(out)],
                          check=False, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-3000:]
    (first, first_losses), (after, after_losses) = pd.read_pickle(out)
    pd.testing.assert_frame_equal(first, after, check_exact=True)
    assert first_losses == after_losses


def test_result_is_a_valid_prediction_table_over_the_dev_ids(baseline, data_dir):
    table = baseline.predictions
    dev = load_examples("sst2", "validation", data_dir).head(24)
    assert table["example_id"].tolist() == dev["example_id"].tolist()
    assert set(table["label"]) <= {"negative", "positive"} and set(table["run"]) == {"sst2__tiny-bert0__full__s42"}
    aligned = align_runs(table)
    assert aligned.classes == ["negative", "positive"] and aligned.probabilities is not None
    assert baseline.metrics["accuracy"] == pytest.approx((table.prediction == table.label).mean())
    assert baseline.timings["optimizer_steps"] == 12 and baseline.timings["train_examples_per_second"] > 0


def test_a_tied_run_reproduces_a_plain_set_seed_trainer_script(tiny_bert, data_dir, baseline):
    from transformers import (
        AutoModelForSequenceClassification,
        AutoTokenizer,
        DataCollatorWithPadding,
        Trainer,
        TrainingArguments,
        set_seed,
    )

    set_seed(42)
    tokenizer = AutoTokenizer.from_pretrained(tiny_bert)
    train = load_examples("sst2", "train", data_dir).head(48)
    dev = load_examples("sst2", "validation", data_dir).head(24)

    def features(frame):
        encoded = tokenizer(frame.text.tolist(), truncation=True, max_length=64)
        return [{"input_ids": i, "token_type_ids": t, "attention_mask": a, "labels": int(y)}
                for i, t, a, y in zip(encoded["input_ids"], encoded["token_type_ids"], encoded["attention_mask"], frame.label)]

    model = AutoModelForSequenceClassification.from_pretrained(tiny_bert, num_labels=2)
    args = TrainingArguments(output_dir="unused", num_train_epochs=2, per_device_train_batch_size=8, per_device_eval_batch_size=64, learning_rate=1e-3,
                             seed=42, report_to="none", save_strategy="no", use_cpu=True, disable_tqdm=True)
    with torch.random.fork_rng():
        torch.use_deterministic_algorithms(True, warn_only=True)
        trainer = Trainer(model=model, args=args, train_dataset=features(train), data_collator=DataCollatorWithPadding(tokenizer))
        trainer.train()
        logits = trainer.predict(features(dev)).predictions
        torch.use_deterministic_algorithms(False)
    plain = prediction_table(baseline.run_id, dev, logits, get_task("sst2"))
    pd.testing.assert_frame_equal(plain, baseline.predictions, check_exact=True)


def test_changing_only_data_order_changes_the_batch_order_and_nothing_else(monkeypatch, tiny_bert, data_dir):
    seeds = FactorSeeds.tied(42)
    first, one = _recorded(monkeypatch, tiny_bert, data_dir, seeds)
    second, other = _recorded(monkeypatch, tiny_bert, data_dir, seeds.replace(data_order=43))
    assert one.initial.keys() == other.initial.keys()
    assert all(torch.equal(one.initial[n], other.initial[n]) for n in one.initial)
    a, b = one.train_batches(first), other.train_batches(second)
    assert a != b
    per_epoch = len(a) // 2
    for epoch in range(2):
        assert sorted(sum(a[epoch * per_epoch:(epoch + 1) * per_epoch], [])) == sorted(sum(b[epoch * per_epoch:(epoch + 1) * per_epoch], []))
    assert first.predictions["example_id"].tolist() == second.predictions["example_id"].tolist()
    assert one.batches[len(a):] == other.batches[len(b):]  # evaluation batches: same examples, same order


def test_changing_only_model_init_changes_the_head_weights_only(monkeypatch, tiny_bert, data_dir):
    seeds = FactorSeeds.tied(42)
    first, one = _recorded(monkeypatch, tiny_bert, data_dir, seeds)
    second, other = _recorded(monkeypatch, tiny_bert, data_dir, seeds.replace(model_init=43))
    changed = {n for n in one.initial if not torch.equal(one.initial[n], other.initial[n])}
    assert changed == {"classifier.weight"}  # the bias starts at zero whatever the seed
    assert one.train_batches(first) == other.train_batches(second)
    assert not first.predictions.equals(second.predictions)


def test_changing_only_optimisation_changes_dropout_not_init_or_order(monkeypatch, tiny_bert, data_dir):
    seeds = FactorSeeds.tied(42)
    first, one = _recorded(monkeypatch, tiny_bert, data_dir, seeds)
    second, other = _recorded(monkeypatch, tiny_bert, data_dir, seeds.replace(optimisation=43))
    assert all(torch.equal(one.initial[n], other.initial[n]) for n in one.initial)
    assert one.train_batches(first) == other.train_batches(second)
    assert not np.array_equal(first.predictions["prob_positive"], second.predictions["prob_positive"])


def test_lora_trains_the_adapter_and_the_head_and_model_init_seeds_the_adapter(monkeypatch, tiny_bert, data_dir):
    seeds = FactorSeeds.tied(42)
    recorder = Recorder(monkeypatch)
    result = _run(tiny_bert, data_dir, seeds, task="rte", method="lora", lora_r=4)
    assert result.predictions["example_id"].nunique() == 24 and result.environment["method"] == "lora"
    assert recorder.trainable and all("lora_" in n or "classifier" in n for n in recorder.trainable)
    lora_a = {n: t for n, t in recorder.initial.items() if "lora_A" in n}
    _run(tiny_bert, data_dir, seeds.replace(model_init=7), task="rte", method="lora", lora_r=4)
    assert any(not torch.equal(t, recorder.initial[n]) for n, t in lora_a.items())


@pytest.mark.parametrize(
    "task, model, method, hparams",
    [
        ("copa", "tiny_bert", "full", {}),  # multiple-choice head
        ("copa", "tiny_llama", "lora", {"lora_r": 4}),  # decoder-only: candidates scored by log-likelihood
        ("rte", "tiny_llama", "full", {"group_by_length": True}),  # decoder-only classification, pad token added
        ("stsb", "tiny_bert", "full", {"pad_to_max_length": True}),  # regression
        ("cb", "tiny_bert", "full", {"max_train_examples": 250, "max_eval_examples": 56, "resplit": True,
                                   "num_labelled": 30, "gradient_accumulation_steps": 2}),
    ],
)
def test_task_types_and_model_kinds(request, data_dir, task, model, method, hparams):
    folder = request.getfixturevalue(model)
    result = _run(folder, data_dir, task=task, method=method, **hparams)
    again = _run(folder, data_dir, task=task, method=method, **hparams)
    pd.testing.assert_frame_equal(result.predictions, again.predictions, check_exact=True)
    aligned = align_runs(result.predictions)
    if task == "stsb":
        assert aligned.task_type == "regression" and set(result.metrics) >= {"pearson", "spearman"}
        assert result.predictions["prediction"].dtype == float
    else:
        assert aligned.probabilities is not None and 0 <= result.metrics["accuracy"] <= 1
    if task == "copa":
        assert set(result.predictions["prediction"]) <= {"choice1", "choice2"}
    if task == "cb":
        assert result.timings["train_examples"] == 30 and all(i.startswith(("train-", "dev-")) for i in aligned.example_ids)


@pytest.mark.slow
def test_real_minilm_fine_tunes_for_a_few_steps(data_dir):
    from seedscope.workflows.demos import minilm_path

    result = _run(minilm_path(), data_dir, task="rte", max_steps=3, max_train_examples=24, max_eval_examples=16,
                  learning_rate=2e-5, max_seq_length=128)
    assert result.timings["optimizer_steps"] == 3 and len(result.predictions) == 16
    assert result.environment["model_kind"] == "sequence" and 0 <= result.metrics["accuracy"] <= 1


@pytest.mark.parametrize(
    "model, hparams, method, message",
    [
        ("/nonexistent/model-folder", {}, "full", "model '/nonexistent/model-folder' not found"),
        ("tiny_bert", {"precision": "fp16"}, "full", "precision fp16 needs a GPU"),
        ("tiny_bert", {"learning_rte": 1e-5}, "full", "unknown hyper-parameter 'learning_rte'"),
        ("tiny_bert", {"lora_target_modules": ["q_proj"]}, "lora", "method lora is not supported"),
        ("tiny_bert", {"max_steps": 0}, "full", "max_steps must be positive"),
    ],
)
def test_bad_input_is_one_clear_error(request, data_dir, model, hparams, method, message):
    folder = request.getfixturevalue(model) if model.startswith("tiny") else model
    with pytest.raises(SeedscopeError, match=message):
        _run(folder, data_dir, method=method, **hparams)


def test_a_folder_that_is_no_model_is_one_clear_error(tmp_path, data_dir):
    (tmp_path / "config.json").write_text('{"hidden_size": 4}')
    with pytest.raises(SeedscopeError, match="cannot be loaded: Unrecognized model"):
        _run(tmp_path, data_dir)
