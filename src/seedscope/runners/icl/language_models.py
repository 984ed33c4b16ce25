"""Loading a language model to prompt: causal (decoder-only) or sequence-to-sequence (T5 family)."""

from __future__ import annotations

from typing import Literal

import torch

from seedscope.errors import SeedscopeError
from seedscope.runners.checkpoints import (
    from_pretrained_checked,
    load_model_config,
    load_tokenizer,
    model_folder,
)
from seedscope.runners.environment import attention_kwargs, compute_device

LMKind = Literal["causal", "seq2seq"]
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def lm_kind(config) -> LMKind:
    """Causal or sequence-to-sequence, from the checkpoint's config; anything else cannot be prompted here."""
    from transformers.models.auto import modeling_auto as auto

    if getattr(config, "is_encoder_decoder", False) and config.model_type in auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "seq2seq"
    if config.model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise SeedscopeError(f"a {config.model_type} model is neither a causal nor a sequence-to-sequence language model, "
                         "so it cannot be prompted (fine-tune it instead)")


def load_language_model(model: str, precision: str, trust_remote_code: bool = False, *, attention: str = "default",
                        device: str = "auto"):
    """(model in eval mode, tokenizer, kind, folder it was read from) for prompting, with the ``attention`` kernel
    on ``device`` (implementation settings)."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    folder = model_folder(model)
    kind = lm_kind(load_model_config(folder, trust_remote_code))
    loader = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForCausalLM
    network = from_pretrained_checked("weights", loader.from_pretrained, folder, dtype=DTYPES[precision],
                    trust_remote_code=trust_remote_code, **attention_kwargs(attention, precision, device))
    tokenizer = load_tokenizer(folder, trust_remote_code)
    return network.to(compute_device(device)).eval(), tokenizer, kind, folder
