"""Runners: one run spec in, one :class:`~seedscope.runners.result.RunResult` out.

:func:`run` picks the runner family by the spec's method and calls its ``runner.run``:
fine-tuning (``full``, ``lora``; :mod:`.finetune`), in-context learning (``icl``, lm-eval tasks
included; :mod:`.icl`) or meta-learning (``protonet``, ``maml``, ``reptile``; :mod:`.meta`).
Each family is imported on first use, so a sweep of one kind never loads the others. A family
imports only its own modules and the shared ones here — :mod:`.checkpoints` (finding and
loading a checkpoint, the cache), :mod:`.data` (a run's examples), :mod:`.environment`
(devices, precision, determinism, the environment record) and :mod:`.result` (the
:class:`RunResult`, its prediction table and metrics, the progress hook) — never another
family's. Every run's timings get the peak memory it reached (what a packing executor needs
to know how many runs fit side by side). :func:`run_fused` trains fine-tuning runs that differ
only in their seeds as one stacked model (:mod:`.finetune.fused`).
"""

from __future__ import annotations

import importlib
import os
import resource
import sys

from seedscope.plan.runs import runner_of


def run(spec, data_dir: str | os.PathLike | None = None, *, on_step=None):
    """Run ``spec`` with the runner of its method; its timings record its peak memory."""
    import torch

    from seedscope.runners.environment import prepare_process

    prepare_process()  # before this process's first CUDA call
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    result = importlib.import_module(f"seedscope.runners.{runner_of(spec.method)}.runner").run(spec, data_dir, on_step=on_step)
    result.timings.update(peak_memory())
    return result


def run_fused(specs, data_dir: str | os.PathLike | None = None, *, on_step=None) -> list:
    """Train fine-tuning ``specs`` that differ only in their seeds as one fused group: a
    :class:`~seedscope.runners.result.RunResult` (with the group's peak memory) or the member's error, per spec."""
    import torch

    from seedscope.runners.environment import prepare_process
    from seedscope.runners.finetune.fused import run_group

    prepare_process()
    if torch.cuda.is_available():
        torch.cuda.reset_peak_memory_stats()
    outcomes = run_group(specs, data_dir, on_step=on_step)
    peaks = peak_memory()
    for outcome in outcomes:
        if not isinstance(outcome, Exception):
            outcome.timings.update(peaks)
    return outcomes


def peak_memory() -> dict:
    """The process's peak resident memory so far and, on a GPU, the peak torch allocated since the reset (bytes)."""
    import torch

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    peaks = {"peak_memory_bytes": rss if sys.platform == "darwin" else rss * 1024}  # macOS counts bytes, Linux KiB
    if torch.cuda.is_available():
        peaks["peak_gpu_memory_bytes"] = torch.cuda.max_memory_allocated()
    return peaks
