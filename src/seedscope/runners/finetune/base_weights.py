"""A checkpoint's weights read once per process: shared by every LoRA run, copied for full fine-tuning.

``from_pretrained`` reads the checkpoint into fresh tensors for every run — seconds each time,
and for LoRA (which trains an adapter and a new head, the base weights never change) the
model's size in memory too. Here the checkpoint's tensors are read once (safetensors, kept
for the next run of the process: a packed worker runs many seeds of one model). Every LoRA
model is built around the very same tensors; a fully fine-tuned one, which changes them, gets
a copy (memory to memory, no file read). The skeleton is made without memory
(accelerate's ``init_empty_weights``), the checkpoint's tensors are assigned to it, not copied,
and only what the checkpoint lacks — the task's new head — is materialised and initialised, from
the global RNG that the caller seeded with the ``model_init`` seed. A model the checkpoint does
not cover but for its head (or a checkpoint without safetensors) is left to ``from_pretrained``.
"""

from __future__ import annotations

import functools
from pathlib import Path

import torch


@functools.lru_cache(maxsize=1)
def checkpoint_tensors(folder: str) -> dict[str, torch.Tensor]:
    """Every tensor of a local checkpoint's safetensors files, as fp32 (read once per process and folder)."""
    from safetensors.torch import load_file

    tensors: dict[str, torch.Tensor] = {}
    for path in sorted(Path(folder).glob("*.safetensors")):
        tensors.update(load_file(path))
    return {name: tensor.float() for name, tensor in tensors.items()}  # fp32 master weights, as from_pretrained


def _assignable(tensors: dict[str, torch.Tensor], expected: set[str], prefix: str) -> dict[str, torch.Tensor]:
    """The checkpoint's tensors under the model's parameter names (a base-model checkpoint lacks ``prefix.``)."""
    named = {}
    for name, tensor in tensors.items():
        for candidate in (name, f"{prefix}.{name}", name.removeprefix(f"{prefix}.")):
            if candidate in expected:
                named[candidate] = tensor
                break
    return named


def shared_base_model(auto_class, folder: str, config, heads: tuple[str, ...], copy: bool = False):
    """``auto_class`` built around the kept checkpoint tensors (``copy``: copies of them) with a freshly
    initialised head, or None when the checkpoint is not a local safetensors folder covering every
    parameter outside ``heads``."""
    if not Path(folder).is_dir():
        return None
    tensors = checkpoint_tensors(str(Path(folder).resolve()))
    if not tensors:
        return None
    from accelerate import init_empty_weights

    with init_empty_weights():  # parameters on the meta device: no memory, no initialisation
        model = auto_class.from_config(config, dtype=torch.float32)
    expected = set(model.state_dict())
    named = _assignable(tensors, expected, model.base_model_prefix)
    if copy:
        named = {name: tensor.clone() for name, tensor in named.items()}
    model.load_state_dict(named, strict=False, assign=True)
    model.tie_weights()
    missing = [name for name, parameter in model.named_parameters() if parameter.is_meta]
    if any(name.split(".")[0] not in heads for name in missing):
        return None
    for module in model.modules():
        if any(parameter.is_meta for parameter in module.parameters(recurse=False)):
            module.to_empty(device="cpu", recurse=False)
            model._init_weights(module)
    return model
