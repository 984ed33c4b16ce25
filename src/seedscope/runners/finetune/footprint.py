"""The shape of a fine-tuning run's model, for estimating its memory before it runs.

A packing executor decides how many runs fit side by side before any of them has measured
its peak (:func:`seedscope.executors.memory.training_bytes`); a fused LoRA group decides how
many of its members pass through the shared base at once (:func:`members_per_pass`). The
parameter count comes from the checkpoint's config alone: the model is built on the meta device
(no memory, no initialisation), so even a large checkpoint costs a fraction of a second to size.
"""

from __future__ import annotations

import functools
import math

from seedscope.errors import SeedscopeError
from seedscope.plan import RunSpec
from seedscope.plan.hparams import FinetuneSettings
from seedscope.runners.checkpoints import load_model_config, model_folder

#: resident memory of a worker that imported torch and transformers, before its run's tensors (bytes)
PROCESS_BYTES = 700 * 2**20
#: values kept for the backward pass per token and layer, in units of the hidden size (the
#: input, Q, K, V, attention output, residuals, layer norms, dropout masks, the 4×-wide
#: feed-forward before and after its activation)
ACTIVATIONS_PER_HIDDEN = 20
#: values kept per token, layer, attention head and attended position (scores, softmax, dropout mask and output)
ACTIVATIONS_PER_SCORE = 4
#: a fused LoRA group's peak memory, at most, as a multiple of one LoRA run's (the default of ``fused_chunk``)
FUSED_LORA_MEMORY = 1.5


@functools.lru_cache(maxsize=8)
def _shape(folder: str, trust_remote_code: bool) -> dict[str, int]:
    from accelerate import init_empty_weights
    from transformers import AutoModel

    config = load_model_config(folder, trust_remote_code)
    with init_empty_weights():
        model = AutoModel.from_config(config, trust_remote_code=trust_remote_code)
    text = config.get_text_config()
    return {"parameters": sum(p.numel() for p in model.parameters()), "hidden": text.hidden_size,
            "layers": text.num_hidden_layers, "heads": text.num_attention_heads}


def model_shape(spec: RunSpec) -> dict[str, int]:
    """Parameters, hidden size, layers and attention heads of ``spec``'s model, with its batch and length."""
    settings = FinetuneSettings.from_hparams(spec.hparams)
    return {**_shape(model_folder(spec.model), settings.trust_remote_code),
            "batch": settings.per_device_train_batch_size, "length": settings.max_seq_length}


def activation_bytes(batch: int, length: int, hidden: int, layers: int, heads: int, value_bytes: int = 4) -> int:
    """What one training step keeps for its backward pass (bytes): for ``batch`` × ``length`` tokens in each of
    ``layers`` layers, ``ACTIVATIONS_PER_HIDDEN`` × ``hidden`` values and ``ACTIVATIONS_PER_SCORE`` attention maps
    of ``heads`` × ``length``."""
    return batch * length * layers * (ACTIVATIONS_PER_HIDDEN * hidden + ACTIVATIONS_PER_SCORE * heads * length) * value_bytes


def members_per_pass(parameters: int, batch: int, length: int, hidden: int, layers: int, heads: int,
                     members: int) -> int:
    """How many of a fused LoRA group's ``members`` pass through the shared base at once so that the group's peak
    stays within :data:`FUSED_LORA_MEMORY` × one LoRA run's.

    One run holds its frozen base (4 bytes a parameter) and the process (``PROCESS_BYTES``): F, and one batch's
    activations: A (:func:`activation_bytes`, at ``length`` = the longest a batch may be). A group passing c
    members at a time holds F + c·A (each member's adapter and head are small beside them), so c is the largest
    whole number with F + c·A ≤ 1.5 (F + A), at least 1 and at most ``members``.
    """
    fixed = parameters * 4 + PROCESS_BYTES
    activations = activation_bytes(batch, length, hidden, layers, heads)
    if activations <= 0:
        return members
    fits = (FUSED_LORA_MEMORY - 1) * fixed / activations + FUSED_LORA_MEMORY
    return max(1, min(members, math.floor(fits)))


def fused_per_pass(spec: RunSpec, members: int) -> int:
    """Members of a fused group of ``members`` runs of ``spec``'s profile that pass at once: its ``fused_chunk``;
    else for LoRA :func:`members_per_pass` (all of them where the model cannot be sized); else all of them (full
    fine-tuning holds K copies of every weight's states, whatever passes at once)."""
    chosen = FinetuneSettings.from_hparams(spec.hparams).fused_chunk
    if chosen is not None:
        return min(chosen, members)
    if spec.method != "lora":
        return members
    try:
        return members_per_pass(members=members, **model_shape(spec))
    except (SeedscopeError, AttributeError, ValueError):  # unknown, or a config without the usual names
        return members
