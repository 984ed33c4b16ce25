"""Fused seeds: K fine-tuning runs that differ only in their seeds, trained as one stacked model in one process.

:func:`run_group` gives each member what its sequential run (:mod:`.runner`) gets — its own head
from its ``model_init`` seed, its own batch order from ``data_order``, its own dropout stream from
``optimisation`` — trains them together (:mod:`.fused_training`), then predicts each member's
evaluation examples with the sequential run's own ``Trainer.predict`` and builds its
:class:`~seedscope.runners.result.RunResult` exactly as a sequential run does. Each run's
environment records ``execution: fused`` with the group's size and the member's place in it.

LoRA members share one frozen base in memory (the base weights every LoRA run of a process
shares, :mod:`.base_weights`): each step passes the K sub-batches through it together, each
with its own adapter and head — by default as few at a time as keep the group's peak memory
within 1.5× one LoRA run's (:func:`~.footprint.fused_per_pass`; the ``fused_chunk``
hyper-parameter sets it), each pass's backward freeing its activations before the next. What cannot be matched is refused before anything runs
(:func:`check`): length-grouped batches, fp16 (its loss scaler), multiple-choice heads, remote code.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence

import torch

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.hparams import FinetuneSettings
from seedscope.plan.runs import profile
from seedscope.runners.environment import (
    Kernels,
    compute_device,
    deterministically,
    implementation,
    resolve_precision,
)
from seedscope.runners.finetune.footprint import fused_per_pass
from seedscope.runners.finetune.fused_training import Member, Trained, train_members
from seedscope.runners.finetune.runner import (
    Prepared,
    fixed_shapes,
    free_gpu_memory,
    fresh_model,
    prepare,
    run_collator,
    run_environment,
    run_result,
    seeded_trainer,
    training_arguments,
)
from seedscope.runners.finetune.throughput import TokenMeter, record, throughput
from seedscope.runners.result import RunResult

#: a member's outcome: its result, or why it failed (a diverged member) — the others' go on
Outcome = RunResult | SeedscopeError


def check(spec: RunSpec) -> None:
    """Refuse, in one sentence, a spec that fused seeds cannot train as its sequential run would."""
    if spec.method not in ("full", "lora"):
        raise SeedscopeError(f"--fuse trains full fine-tuning and LoRA runs, not {spec.method} runs; leave --fuse out")
    settings = FinetuneSettings.from_hparams(spec.hparams)
    refused = {"group_by_length": settings.group_by_length, "trust_remote_code": settings.trust_remote_code,
               "precision fp16": resolve_precision(settings.precision, settings.device) == "fp16"}
    named = [name for name, on in refused.items() if on]
    if named:
        raise SeedscopeError(f"--fuse cannot run {named[0]} (a sequential run would not be matched); leave --fuse out "
                             "or change the setting")
    if settings.cuda_graphs:
        check_graphs(settings)


def check_graphs(settings: FinetuneSettings) -> None:
    """Refuse ``cuda_graphs: true`` where there is no CUDA graph to capture: no GPU, shapes that change with every
    batch, or a torch that loses the gradients through the attention fold's compiled rule."""
    from seedscope.runners.finetune.folded_attention import compiled_fold_works

    device = compute_device(settings.device)
    if device.type != "cuda":
        raise SeedscopeError(f"cuda_graphs: true captures CUDA graphs, and these runs train on {device.type}; leave it "
                             "out or train on a GPU")
    if settings.padding_for("cuda") == "dynamic":
        raise SeedscopeError("cuda_graphs: true needs fixed shapes, and padding: dynamic pads every batch to its own "
                             "length; set padding to buckets or max_length")
    if not compiled_fold_works():
        raise SeedscopeError(f"cuda_graphs: true needs a torch whose compiled vmap rules keep gradients, and torch "
                             f"{torch.__version__} does not (2.13 does); leave it out or upgrade torch")


def check_kind(kind: str, task: str) -> None:
    """Refuse a head that fused seeds cannot train (a multiple-choice head, or a decoder scoring each choice)."""
    if kind != "sequence":
        raise SeedscopeError(f"--fuse trains classification and regression heads only, not {task}'s multiple-choice "
                             "head; leave --fuse out")


def check_group(specs: Sequence[RunSpec], prepared: Sequence[Prepared]) -> None:
    """The members of one group must share everything but their seeds, a sequence head, and a training-set size."""
    first = specs[0]
    for spec in specs[1:]:
        if profile(spec) != profile(first):
            raise SeedscopeError(f"runs {first.run_id} and {spec.run_id} differ in more than their seeds, so they "
                                 "cannot be fused")
    check_kind(prepared[0].kind, prepared[0].task.name)
    sizes = {len(p.train_features) for p in prepared}
    if len(sizes) > 1:
        raise SeedscopeError(f"the fused runs {', '.join(s.run_id for s in specs)} draw training sets of different "
                             f"sizes ({', '.join(map(str, sorted(sizes)))}), so they cannot take the same steps")


def run_group(specs: Sequence[RunSpec], data_dir: str | os.PathLike | None = None, *,
              on_step=None) -> list[Outcome]:
    """Train ``specs`` (runs that differ only in their seeds) fused; one outcome per spec, in order.

    ``on_step(spec, done, total)`` reports each member's optimiser steps. A member that diverges is
    a :class:`SeedscopeError` in its place; an error that stops the whole group is raised.
    """
    for spec in specs:
        check(spec)
    return deterministically(lambda kernels: _run_group(specs, data_dir, on_step, kernels))


def _run_group(specs: Sequence[RunSpec], data_dir, on_step, kernels: Kernels) -> list[Outcome]:
    started = time.perf_counter()
    prepared = [prepare(spec, data_dir) for spec in specs]
    check_group(specs, prepared)
    head = prepared[0]
    settings = head.settings
    device = compute_device(settings.device)
    with (implementation(settings, kernels, fixed_shapes(settings)) as determinism,
          tempfile.TemporaryDirectory(prefix="seedscope-") as scratch):
        models = [fresh_model(spec, p) for spec, p in zip(specs, prepared)]
        members = [Member(p.train_features, spec.seeds.data_order, spec.seeds.optimisation)
                   for spec, p in zip(specs, prepared)]
        hook = (lambda done, total: [on_step(spec, done, total) for spec in specs]) if on_step else None
        per_pass = fused_per_pass(specs[0], len(specs))
        meter = TokenMeter()
        trained_at = time.perf_counter()
        trained = train_members(models, members, training_arguments(settings, specs[0], head.precision, scratch),
                                run_collator(head, *prepared[1:]), head.tokenizer, device, head.precision, hook,
                                meter.stacked, per_pass, graph_options(settings))
        train_seconds = time.perf_counter() - trained_at
        figures = throughput(meter, models[0], train_seconds, device, head.precision, len(specs))
        outcomes = [_evaluate(k, specs, prepared, models, trained, scratch, per_pass) for k in range(len(specs))]
    for outcome in outcomes:
        if isinstance(outcome, RunResult):
            outcome.environment.update(determinism.to_dict())
            outcome.timings.update(setup_seconds=trained_at - started, train_seconds=train_seconds,
                                   total_seconds=trained_at - started + train_seconds + outcome.timings["eval_seconds"],
                                   train_examples_per_second=_examples_seen(outcome, settings) / train_seconds)
            record(outcome, figures)
    del models, trained
    free_gpu_memory()
    return outcomes


def graph_options(settings: FinetuneSettings) -> dict | None:
    """``torch.compile``'s options for the loss pass: the ``cudagraphs`` backend (ATen operations replayed as a CUDA
    graph; no kernels generated, so nothing to compile for minutes) with ``cuda_graphs: true``, else None."""
    return {"backend": "cudagraphs"} if settings.cuda_graphs else None


def _evaluate(k: int, specs, prepared, models, trained: Trained, scratch: str, per_pass: int) -> Outcome:
    """Member ``k``'s trained weights in its own model, predicted by the sequential run's ``Trainer``."""
    spec, mine, model = specs[k], prepared[k], models[k]
    if k in trained.diverged:
        step, value = trained.diverged[k]
        return SeedscopeError(f"training diverged: the loss became {value} at optimiser step {step} (fused with "
                              f"{len(specs) - 1} other run(s), which went on)")
    parameters = dict(model.named_parameters())
    with torch.no_grad():
        for name, stacked in trained.params.items():  # a LoRA group's shared base never changed
            parameters[name].copy_(stacked[k])
    trainer = seeded_trainer(model, spec, mine, scratch)
    evaluated_at = time.perf_counter()
    output = trainer.predict(mine.eval_features)
    eval_seconds = time.perf_counter() - evaluated_at
    execution = {"execution": "fused", "fused_members": len(specs), "fused_member": k, "fused_per_pass": per_pass,
                 "cuda_graphs": mine.settings.cuda_graphs}
    timings = {"eval_seconds": eval_seconds, "train_examples": len(mine.train_features),
               "eval_examples": len(mine.eval_features), "optimizer_steps": trained.steps,
               "eval_examples_per_second": len(mine.eval_features) / eval_seconds if eval_seconds > 0 else float("nan")}
    return run_result(spec, mine, output.predictions, (trained.losses[k], output.metrics["test_loss"]), timings,
                      run_environment(spec, mine, model, execution))


def _examples_seen(result: RunResult, settings: FinetuneSettings) -> float:
    """Training examples a run went through, as the ``Trainer`` counts them for its examples per second."""
    if settings.max_steps > 0:
        return float(settings.max_steps * settings.per_device_train_batch_size * settings.gradient_accumulation_steps)
    return float(result.timings["train_examples"] * settings.num_train_epochs)
