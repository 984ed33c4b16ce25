"""Fine-tune one run spec with the Hugging Face ``Trainer`` and return its dev predictions.

The randomness factors are applied in the reference pipeline's order, each from its own
seed: ``data_split`` and ``label_choice`` pick the examples (``runners.data``),
``data_order`` drives the train sampler (``runners.trainer``), ``model_init`` seeds the global
RNG right before the model (new head, LoRA adapter) is created, and ``optimisation`` seeds it
again right before training (dropout). With all factors tied to one seed this is exactly a
standard ``set_seed(seed)`` script.
"""

from __future__ import annotations

import gc
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from transformers import PrinterCallback, TrainingArguments

from seedscope.plan import RunSpec
from seedscope.plan.hparams import FinetuneSettings
from seedscope.runners.checkpoints import load_model_config, model_folder
from seedscope.runners.data import run_examples
from seedscope.runners.environment import (
    Kernels,
    compute_device,
    describe_environment,
    deterministically,
    implementation,
    implementation_record,
    resolve_precision,
)
from seedscope.runners.finetune.features import collator
from seedscope.runners.finetune.padding import example_lengths, feature_length
from seedscope.runners.finetune.throughput import TokenMeter, record, throughput
from seedscope.runners.finetune.models import load_model, model_kind
from seedscope.runners.finetune.process_cache import features_of, tokenizer_of
from seedscope.runners.finetune.trainer import SeededTrainer, StepProgress
from seedscope.runners.result import RunResult, StepHook, prediction_table, run_metrics
from seedscope.tasks import TaskSpec, get_task


def training_arguments(settings: FinetuneSettings, spec: RunSpec, precision: str, output_dir: str) -> TrainingArguments:
    """Trainer settings: no checkpoints, no logging integrations, our own evaluation."""
    return TrainingArguments(
        output_dir=output_dir,
        learning_rate=settings.learning_rate,
        num_train_epochs=settings.num_train_epochs,
        max_steps=settings.max_steps,
        per_device_train_batch_size=settings.per_device_train_batch_size,
        per_device_eval_batch_size=settings.per_device_eval_batch_size,
        gradient_accumulation_steps=settings.gradient_accumulation_steps,
        lr_scheduler_type=settings.lr_scheduler_type,
        warmup_steps=settings.warmup_ratio,
        weight_decay=settings.weight_decay,
        train_sampling_strategy="group_by_length" if settings.group_by_length else "random",
        bf16=precision == "bf16",
        fp16=precision == "fp16",
        seed=spec.seeds.optimisation,
        data_seed=spec.seeds.data_order,
        eval_strategy="no",
        save_strategy="no",
        logging_strategy="no",
        report_to="none",
        disable_tqdm=True,
        dataloader_num_workers=0,
        use_cpu=compute_device(settings.device).type == "cpu",
    )


@dataclass(frozen=True)
class Prepared:
    """What one spec's training and evaluation need: its settings, task, model folder and kind, examples, features."""

    settings: FinetuneSettings
    task: TaskSpec
    precision: str
    folder: str
    kind: str
    dev: pd.DataFrame
    tokenizer: Any
    train_features: list
    eval_features: list


def prepare(spec: RunSpec, data_dir: str | os.PathLike | None) -> Prepared:
    """Settings, the model's folder and head kind, the run's examples and their features (kept per process)."""
    settings = FinetuneSettings.from_hparams(spec.hparams)
    task = get_task(spec.task)
    precision = resolve_precision(settings.precision, settings.device)
    folder = model_folder(spec.model)  # a GGUF file (the packaged SmolLM2) is converted once
    kind = model_kind(load_model_config(folder, settings.trust_remote_code), task)
    train, dev = run_examples(task, settings, spec.seeds, data_dir)
    tokenizer = tokenizer_of(folder, settings.trust_remote_code)  # kept, with the features, for the next run
    regression = task.task_type == "regression"
    return Prepared(settings, task, precision, folder, kind, dev, tokenizer,
                    features_of(train, kind, tokenizer, settings.max_seq_length, regression),
                    features_of(dev, kind, tokenizer, settings.max_seq_length, regression))


def fresh_model(spec: RunSpec, prepared: Prepared):
    """The spec's model, its new head drawn from the ``model_init`` seed."""
    spec.seeds.seed_global("model_init")
    return load_model(prepared.folder, prepared.kind, prepared.task, prepared.settings, spec.method, prepared.tokenizer)


def run_collator(prepared: Prepared, *more: Prepared):
    """The collator of a run (or of fused runs): its padding, buckets drawn from every example it will see."""
    every = (prepared, *more)
    lengths = example_lengths(*[p.train_features for p in every], prepared.eval_features)
    return collator(prepared.kind, prepared.tokenizer, prepared.settings, lengths)


def seeded_trainer(model, spec: RunSpec, prepared: Prepared, scratch: str, on_step: StepHook | None = None,
                   meter: TokenMeter | None = None) -> SeededTrainer:
    """The Trainer of one run: its settings, its ``data_order`` seed's batches, our own evaluation; ``meter``
    counts its training batches."""
    settings = prepared.settings
    collate = run_collator(prepared)
    callbacks = ([StepProgress(on_step)] if on_step else []) + ([meter.callback()] if meter else [])
    trainer = SeededTrainer(
        model=model,
        args=training_arguments(settings, spec, prepared.precision, scratch),
        train_dataset=prepared.train_features,
        data_collator=meter.collating(collate) if meter else collate,
        processing_class=prepared.tokenizer,
        callbacks=callbacks or None,
        data_order_seed=spec.seeds.data_order,
        lengths=[feature_length(f) for f in prepared.train_features] if settings.group_by_length else None,
    )
    trainer.remove_callback(PrinterCallback)  # the run's metrics are returned, not printed
    return trainer


def run_environment(spec: RunSpec, prepared: Prepared, model, execution: dict) -> dict:
    """The environment record of a run: libraries, device, seeds, implementation, and how it was executed."""
    return {
        **describe_environment(),
        "precision": prepared.precision,
        "model_kind": prepared.kind,
        "method": spec.method,
        "model_folder": prepared.folder,
        "seeds": spec.seeds.to_dict(),
        **execution,
        **implementation_record(prepared.settings, prepared.precision, prepared.settings.per_device_eval_batch_size, model),
    }


def run_result(spec: RunSpec, prepared: Prepared, logits, losses: tuple[float, float], timings: dict,
               environment: dict) -> RunResult:
    """The run's prediction table, metrics (with its training and evaluation loss), timings and environment."""
    table = prediction_table(spec.run_id, prepared.dev, logits, prepared.task)
    metrics = run_metrics(table, prepared.task)
    metrics.update(train_loss=float(losses[0]), eval_loss=float(losses[1]))
    return RunResult(spec.run_id, table, metrics, timings, environment)


def free_gpu_memory() -> None:
    """Free a run's GPU memory before the next run of the sweep."""
    if torch.cuda.is_available():
        gc.collect()
        torch.cuda.empty_cache()


def run(spec: RunSpec, data_dir: str | os.PathLike | None = None, *, on_step: StepHook | None = None) -> RunResult:
    """Fine-tune ``spec`` and evaluate it on the dev split (or the held-out part of a re-split), with fast
    deterministic kernels where they keep the promise (:func:`~seedscope.runners.environment.deterministically`)."""
    return deterministically(lambda kernels: _run(spec, data_dir, on_step, kernels))


def fixed_shapes(settings) -> bool:
    """Whether a run's batches take few shapes (length buckets or one fixed length), which attention kernels may
    plan for."""
    return settings.padding_for(compute_device(settings.device).type) != "dynamic"


def _run(spec: RunSpec, data_dir, on_step: StepHook | None, kernels: Kernels) -> RunResult:
    started = time.perf_counter()
    prepared = prepare(spec, data_dir)
    with (implementation(prepared.settings, kernels, fixed_shapes(prepared.settings)) as determinism,
          tempfile.TemporaryDirectory(prefix="seedscope-") as scratch):
        model = fresh_model(spec, prepared)
        meter = TokenMeter()
        trainer = seeded_trainer(model, spec, prepared, scratch, on_step, meter)
        spec.seeds.seed_global("optimisation")
        trained_at = time.perf_counter()
        train_output = trainer.train()
        evaluated_at = time.perf_counter()
        figures = throughput(meter, model, evaluated_at - trained_at, compute_device(prepared.settings.device),
                             prepared.precision)
        output = trainer.predict(prepared.eval_features)
        finished = time.perf_counter()
        environment = run_environment(spec, prepared, model, {"execution": "sequential"})
        steps = trainer.state.global_step
    environment.update(determinism.to_dict())  # complete once the block has ended
    del trainer, model
    free_gpu_memory()
    train_seconds, eval_seconds = evaluated_at - trained_at, finished - evaluated_at
    timings = {
        "setup_seconds": trained_at - started,
        "train_seconds": train_seconds,
        "eval_seconds": eval_seconds,
        "total_seconds": finished - started,
        "train_examples": len(prepared.train_features),
        "eval_examples": len(prepared.eval_features),
        "optimizer_steps": steps,
        "train_examples_per_second": float(train_output.metrics["train_samples_per_second"]),
        "eval_examples_per_second": len(prepared.eval_features) / eval_seconds if eval_seconds > 0 else float("nan"),
    }
    losses = (train_output.training_loss, output.metrics["test_loss"])
    result = run_result(spec, prepared, output.predictions, losses, timings, environment)
    record(result, figures)
    return result
