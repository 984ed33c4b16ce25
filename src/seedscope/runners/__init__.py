"""Runners: one run spec in, one :class:`~seedscope.runners.result.RunResult` out.

:func:`run` picks the runner by the spec's method: fine-tuning (``full``, ``lora``,
:mod:`.finetune`), in-context learning (``icl``, :mod:`.icl`) or meta-learning (``protonet``,
``maml``, ``reptile``, :mod:`.meta`). Each is imported on first use, so a sweep of one kind
never loads the others.
"""

from __future__ import annotations

import importlib
import os

from seedscope.plan.runs import runner_of


def run(spec, data_dir: str | os.PathLike | None = None, *, on_step=None):
    """Run ``spec`` with the runner of its method."""
    return importlib.import_module(f"seedscope.runners.{runner_of(spec.method)}").run(spec, data_dir, on_step=on_step)
