"""Runners: one run spec in, one :class:`~seedscope.runners.result.RunResult` out.

:func:`run` picks the runner by the spec's method: fine-tuning (``full``, ``lora``,
:mod:`.finetune`) or in-context learning (``icl``, :mod:`.icl`). Each is imported on first use,
so a sweep of one kind never loads the other.
"""

from __future__ import annotations

import os


def run(spec, data_dir: str | os.PathLike | None = None, *, on_step=None):
    """Run ``spec`` with the runner of its method."""
    if spec.method == "icl":
        from seedscope.runners import icl

        return icl.run(spec, data_dir, on_step=on_step)
    from seedscope.runners import finetune

    return finetune.run(spec, data_dir, on_step=on_step)
