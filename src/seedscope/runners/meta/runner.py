"""The meta-learning runner: ProtoNet, MAML or Reptile on few-shot episodes, one run spec in, a prediction table out.

As in the reference's meta-learning family: a text CNN over a frozen pretrained encoder's token
states (:mod:`.token_states`, computed once per process), trained episodically
(:mod:`.meta_learners`) and evaluated by adapting on a support set and predicting every test
example. Each factor draws from its own generator, in the pipeline's order:

=============== ==================================================================================
``data_split``  which labelled examples form the pool / the test set (with ``resplit``)
``label_choice`` which pool examples are labelled (with ``num_labelled``)
``sample_order`` the stream of training episodes
``model_init``  the CNN's (and head's) initial weights
``optimisation`` dropout masks during training
``sample_choice`` the support examples the learner adapts on at evaluation
=============== ==================================================================================

``data_order`` and ``prompt_format`` mean nothing here. Probabilities (softmax of the logits)
are kept, so probabilistic consistency works; metrics are the usual ones, macro-F1 among them.
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.hparams import MetaSettings
from seedscope.predictions import EXAMPLE_ID
from seedscope.runners.checkpoints import model_folder
from seedscope.runners.data import candidate_examples, run_examples, select_examples
from seedscope.runners.environment import (
    compute_device,
    describe_environment,
    implementation,
    implementation_record,
)
from seedscope.runners.meta.episodes import episode_stream, support_set
from seedscope.runners.meta.learners import TextCNN, meta_train, predict
from seedscope.runners.meta.token_states import token_states
from seedscope.runners.result import RunResult, StepHook, prediction_table, run_metrics
from seedscope.tasks import TaskSpec, get_task


def check_task(task: TaskSpec) -> None:
    """Episodes need classes: regression and multiple choice (each example its own options) are refused."""
    if task.task_type != "classification":
        raise SeedscopeError(f"meta-learning builds episodes from classes, and {task.name} is a {task.task_type.replace('_', '-')} "
                             "task; choose a classification task (e.g. sst2, cola, mrpc)")


def check(spec: RunSpec, data_dir: str | os.PathLike | None = None) -> None:
    """Everything that can be wrong before a sweep starts: settings, task, encoder, enough examples per class."""
    from seedscope.runners.checkpoints import load_model_config

    settings = MetaSettings.from_hparams(spec.hparams)
    task = get_task(spec.task)
    check_task(task)
    load_model_config(model_folder(spec.model), settings.trust_remote_code)
    pool, _ = run_examples(task, settings, spec.seeds, data_dir)
    labels = pool["label"].astype(int).to_numpy()
    next(episode_stream(labels, task.num_labels, settings.shots, settings.queries, 1, np.random.default_rng(0),
                        task.label_names))


def build_model(settings: MetaSettings, method: str, hidden: int, classes: int) -> TextCNN:
    """The base learner (ProtoNet: embedding only; MAML, Reptile: with a class head), from the global RNG."""
    return TextCNN(hidden, settings.filters, settings.kernel_sizes, settings.dropout,
                   None if method == "protonet" else classes)


def run(spec: RunSpec, data_dir: str | os.PathLike | None = None, *, on_step: StepHook | None = None) -> RunResult:
    """Meta-train ``spec.method`` on the labelled pool's episodes, adapt on a support set, predict the test examples."""
    settings = MetaSettings.from_hparams(spec.hparams)
    device = compute_device(settings.device)  # the encoder, the token states, the CNN and every episode live there
    # a GPU's convolution and index kernels need the deterministic switches (the default, as for every runner)
    with implementation(settings) as determinism:
        result = _run(spec, data_dir, device, on_step)
        result.environment.update(implementation_record(settings, "fp32", settings.encoder_batch_size))
    result.environment.update(determinism.to_dict())
    return result


def _run(spec: RunSpec, data_dir: str | os.PathLike | None, device: torch.device, on_step: StepHook | None) -> RunResult:
    started = time.perf_counter()
    settings = MetaSettings.from_hparams(spec.hparams)
    task = get_task(spec.task)
    check_task(task)
    classes = task.num_labels
    candidates = candidate_examples(task, settings, data_dir)
    pool, tests = select_examples(task, settings, spec.seeds, *candidates)
    folder = model_folder(spec.model)
    # every sentence any seed could draw is encoded together: the same set, so one encoding, for all runs
    pool_states, test_states = token_states(folder, [pool, tests], settings.max_seq_length, settings.encoder_batch_size,
                                            settings.trust_remote_code, encode_with=candidates, device=device)
    labels = pool["label"].astype(int).to_numpy()
    episodes = list(episode_stream(labels, classes, settings.shots, settings.queries, settings.episodes,
                                   spec.seeds.numpy("sample_order"), task.label_names))
    support = support_set(labels, classes, settings.shots, spec.seeds.numpy("sample_choice"), task.label_names)
    spec.seeds.seed_global("model_init")
    model = build_model(settings, spec.method, pool_states.shape[-1], classes).to(device)  # drawn on the CPU
    encoded = time.perf_counter()
    spec.seeds.seed_global("optimisation")
    pool_labels = torch.tensor(labels, device=device)
    done = iter(range(1, settings.episodes + 1))
    meta_train(spec.method, model, pool_states, pool_labels, episodes, classes,
               meta_learning_rate=settings.meta_learning_rate, inner_learning_rate=settings.inner_learning_rate,
               inner_steps=settings.inner_steps, first_order=settings.first_order,
               outer_step_size=settings.outer_step_size, on_episode=(lambda _loss: on_step(next(done), settings.episodes)) if on_step else None)
    trained = time.perf_counter()
    rows = torch.tensor(support, device=device)
    logits = predict(spec.method, model, pool_states[rows], pool_labels[rows], test_states, classes,
                     inner_learning_rate=settings.inner_learning_rate, steps=settings.eval_inner_steps).cpu()
    finished = time.perf_counter()
    table = prediction_table(spec.run_id, tests, logits.numpy(), task)
    timings = {
        "setup_seconds": encoded - started,
        "train_seconds": trained - encoded,
        "eval_seconds": finished - trained,
        "total_seconds": finished - started,
        "train_examples": len(pool),
        "eval_examples": len(tests),
        "episodes": settings.episodes,
        "eval_examples_per_second": len(tests) / (finished - trained) if finished > trained else float("nan"),
    }
    environment = {
        **describe_environment(), "precision": "fp32", "method": spec.method, "model_kind": "meta",
        "model_folder": folder, "seeds": spec.seeds.to_dict(),
        "support_ids": pool[EXAMPLE_ID].iloc[support].astype(str).tolist(),
        "trainable_parameters": sum(p.numel() for p in model.parameters()),
    }
    return RunResult(spec.run_id, table, run_metrics(table, task), timings, environment)
