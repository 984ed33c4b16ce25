"""The shape of a fine-tuning run's model, for estimating its memory before it runs.

A packing executor decides how many runs fit side by side before any of them has measured
its peak (:func:`seedscope.executors.memory.training_bytes`). The parameter count comes from
the checkpoint's config alone: the model is built on the meta device (no memory, no
initialisation), so even a large checkpoint costs a fraction of a second to size.
"""

from __future__ import annotations

import functools

from seedscope.plan import RunSpec
from seedscope.plan.hparams import FinetuneSettings
from seedscope.runners.checkpoints import load_model_config, model_folder


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
