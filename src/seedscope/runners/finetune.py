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

import numpy as np
import pandas as pd
import torch
from transformers import PrinterCallback, TrainingArguments

from seedscope.errors import SeedscopeError
from seedscope.metrics.macro import per_run_scores
from seedscope.plan import RunSpec
from seedscope.predictions import EXAMPLE_ID, LABEL, PREDICTION, PROB_PREFIX, RUN, align_runs
from seedscope.runners.data import run_examples
from seedscope.runners.environment import describe_environment, deterministic_mode
from seedscope.runners.features import collator, encode, feature_length
from seedscope.runners.language_models import model_folder
from seedscope.runners.models import load_model, load_model_config, load_tokenizer, model_kind
from seedscope.runners.result import RunResult
from seedscope.plan.hparams import FinetuneSettings
from seedscope.runners.trainer import SeededTrainer, StepHook, StepProgress
from seedscope.tasks import TaskSpec, get_task


def resolve_precision(requested: str) -> str:
    """``auto`` → bf16 (fp16 without bf16 support) on a GPU, fp32 on CPU; half precision needs a GPU."""
    cuda = torch.cuda.is_available()
    if requested == "auto":
        return ("bf16" if torch.cuda.is_bf16_supported() else "fp16") if cuda else "fp32"
    if requested in ("bf16", "fp16") and not cuda:
        raise SeedscopeError(f"precision {requested} needs a GPU; use precision auto or fp32 on this machine")
    return requested


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
        use_cpu=not torch.cuda.is_available(),
    )


def run(spec: RunSpec, data_dir: str | os.PathLike | None = None, *, on_step: StepHook | None = None) -> RunResult:
    """Fine-tune ``spec`` and evaluate it on the dev split (or the held-out part of a re-split)."""
    started = time.perf_counter()
    settings = FinetuneSettings.from_hparams(spec.hparams)
    task = get_task(spec.task)
    precision = resolve_precision(settings.precision)
    folder = model_folder(spec.model)  # a GGUF file (the packaged SmolLM2) is converted once
    kind = model_kind(load_model_config(folder, settings.trust_remote_code), task)
    train, dev = run_examples(task, settings, spec.seeds, data_dir)
    tokenizer = load_tokenizer(folder, settings.trust_remote_code)
    regression = task.task_type == "regression"
    train_features = encode(train, kind, tokenizer, settings.max_seq_length, regression)
    eval_features = encode(dev, kind, tokenizer, settings.max_seq_length, regression)
    with deterministic_mode(settings.deterministic) as determinism, tempfile.TemporaryDirectory(prefix="seedscope-") as scratch:
        spec.seeds.seed_global("model_init")
        model = load_model(folder, kind, task, settings, spec.method, tokenizer)
        trainer = SeededTrainer(
            model=model,
            args=training_arguments(settings, spec, precision, scratch),
            train_dataset=train_features,
            data_collator=collator(kind, tokenizer, settings),
            processing_class=tokenizer,
            callbacks=[StepProgress(on_step)] if on_step else None,
            data_order_seed=spec.seeds.data_order,
            lengths=[feature_length(f) for f in train_features] if settings.group_by_length else None,
        )
        trainer.remove_callback(PrinterCallback)  # the run's metrics are returned, not printed
        spec.seeds.seed_global("optimisation")
        trained_at = time.perf_counter()
        train_output = trainer.train()
        evaluated_at = time.perf_counter()
        output = trainer.predict(eval_features)
        finished = time.perf_counter()
        environment = {
            **describe_environment(),
            "precision": precision,
            "model_kind": kind,
            "method": spec.method,
            "model_folder": folder,
            "seeds": spec.seeds.to_dict(),
        }
        steps = trainer.state.global_step
    environment.update(determinism.to_dict())  # complete once the block has ended
    del trainer, model
    if torch.cuda.is_available():  # free this run's GPU memory before the next run of the sweep
        gc.collect()
        torch.cuda.empty_cache()

    table = prediction_table(spec.run_id, dev, output.predictions, task)
    metrics = run_metrics(table, task)
    metrics.update(train_loss=float(train_output.training_loss), eval_loss=float(output.metrics["test_loss"]))
    train_seconds, eval_seconds = evaluated_at - trained_at, finished - evaluated_at
    timings = {
        "setup_seconds": trained_at - started,
        "train_seconds": train_seconds,
        "eval_seconds": eval_seconds,
        "total_seconds": finished - started,
        "train_examples": len(train_features),
        "eval_examples": len(eval_features),
        "optimizer_steps": steps,
        "train_examples_per_second": float(train_output.metrics["train_samples_per_second"]),
        "eval_examples_per_second": len(eval_features) / eval_seconds if eval_seconds > 0 else float("nan"),
    }
    return RunResult(spec.run_id, table, metrics, timings, environment)


def prediction_table(run_id: str, frame: pd.DataFrame, logits: np.ndarray, task: TaskSpec) -> pd.DataFrame:
    """Predictions in the prediction-table format: label names and one probability per class."""
    logits = np.asarray(logits, dtype=np.float64)
    base = {RUN: run_id, EXAMPLE_ID: frame["example_id"].astype(str).to_numpy()}
    if task.task_type == "regression":
        return pd.DataFrame({**base, PREDICTION: logits.reshape(len(frame)), LABEL: frame["label"].astype(float).to_numpy()})
    shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
    probabilities = shifted / shifted.sum(axis=1, keepdims=True)
    names = np.array(task.label_names, dtype=object)
    columns = {
        **base,
        PREDICTION: names[probabilities.argmax(axis=1)],
        LABEL: names[frame["label"].astype(int).to_numpy()],
    }
    columns.update({f"{PROB_PREFIX}{name}": probabilities[:, j] for j, name in enumerate(task.label_names)})
    return pd.DataFrame(columns)


def run_metrics(table: pd.DataFrame, task: TaskSpec) -> dict:
    """The run's macro metrics (``seedscope.metrics``): fractions, correlations for regression."""
    task_type = "regression" if task.task_type == "regression" else "classification"
    scores = per_run_scores(align_runs(table, task_type=task_type, source=f"run {table[RUN].iloc[0]}"))
    return {name: float(value) for name, value in scores.iloc[0].items()}
