"""Frozen encoder token states: what the meta-learners read, computed once and kept.

The reference's meta-learners are a small text CNN over a frozen BERT's token representations.
The encoder never trains, so each sentence's token states are the same in every run: they are
computed once for all the sentences any run of the same data settings can touch (the runner
passes the rows every seed draws from) and kept, in this process and in the cache
(``$SEEDSCOPE_CACHE/token-states``, default ``~/.cache/seedscope``), so a sweep, its parallel
workers and every later study pay for the encoder once per task. The sentences are encoded in a
fixed order (by length, then text) and batch layout, so a run's states — and its predictions —
do not depend on which runs came before it, in this process or another.
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
from pathlib import Path
from typing import Sequence

import pandas as pd
import torch

from seedscope.atomic import atomic_path
from seedscope.runners.checkpoints import cache_dir

#: bumped when how the states are computed changes (layer, order, batch layout), so that older kept states are not read
STATES_VERSION = 1
#: the texts of one example: sentence and (pair tasks) second sentence
Text = tuple[str, str | None]


def example_texts(frame: pd.DataFrame) -> list[Text]:
    """Each example's (text, text_pair or None)."""
    pairs = frame["text_pair"] if "text_pair" in frame else pd.Series([None] * len(frame))
    return [(str(text), None if pair is None or pd.isna(pair) else str(pair)) for text, pair in zip(frame["text"], pairs)]


@functools.lru_cache(maxsize=1)
def _encoder(folder: str, trust_remote_code: bool, device: str):
    from transformers import AutoModel

    from seedscope.runners.checkpoints import from_pretrained_checked, load_tokenizer

    model = from_pretrained_checked("weights", AutoModel.from_pretrained, folder, trust_remote_code=trust_remote_code, dtype=torch.float32)
    return model.to(device).eval(), load_tokenizer(folder, trust_remote_code)


@functools.lru_cache(maxsize=2)
def _encoded(folder: str, texts: tuple[Text, ...], max_length: int, batch_size: int,
             trust_remote_code: bool, device: str) -> dict[Text, torch.Tensor]:
    """Each text's last-layer token states ([tokens, hidden], fp32, on ``device``): from the cache, else encoded."""
    path = cache_file(folder, texts, max_length, batch_size, device)
    states = None if path is None else read_cached(path, texts, device)
    if states is None:
        states = _encode(folder, texts, max_length, batch_size, trust_remote_code, device)
        if path is not None:
            write_cached(path, texts, states)
    return states


def cache_file(folder: str, texts: tuple[Text, ...], max_length: int, batch_size: int, device: str) -> Path | None:
    """Where the states of ``texts`` are kept: named by everything their bits depend on (the checkpoint's files, the
    texts, the length and batch layout, the processor and its thread count — kernels split their sums by threads —,
    the library versions, how seedscope encodes). None for a hub name, whose files can change under the same name:
    its states are kept in this process only."""
    import transformers

    root = Path(folder)
    if not root.is_dir():
        return None
    files = sorted(f for f in root.iterdir() if f.is_file())
    identity = [str(root.resolve()), *(f"{f.name}:{f.stat().st_size}:{f.stat().st_mtime_ns}" for f in files),
                str(max_length), str(batch_size), _processor(device), torch.__version__, transformers.__version__,
                f"v{STATES_VERSION}"]
    digest = hashlib.sha256(json.dumps([identity, texts]).encode()).hexdigest()[:24]
    return cache_dir() / "token-states" / f"{digest}.pt"


def _processor(device: str) -> str:
    """The processor the states are computed on, as far as it changes their bits."""
    if torch.device(device).type == "cuda":
        return f"cuda:{torch.cuda.get_device_name(torch.device(device))}"
    return f"{torch.device(device).type}:{torch.backends.cpu.get_cpu_capability()}:{torch.get_num_threads()} threads"


def read_cached(path: Path, texts: tuple[Text, ...], device: str) -> dict[Text, torch.Tensor] | None:
    """The kept states of ``texts``, or None when there are none (or the file is not what was written)."""
    try:
        kept = torch.load(path, map_location=device, weights_only=True)
        states, lengths = kept["states"], kept["lengths"].tolist()
    except (OSError, KeyError, TypeError, ValueError, AttributeError, RuntimeError, EOFError, pickle.UnpicklingError):
        return None
    if len(lengths) != len(texts) or sum(lengths) != len(states):
        return None
    return dict(zip(texts, torch.split(states, lengths)))


def write_cached(path: Path, texts: tuple[Text, ...], states: dict[Text, torch.Tensor]) -> None:
    """Keep the states of ``texts`` (atomically: a reader sees a whole file or none); a cache that cannot be
    written is skipped, never an error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(path) as staging:
            torch.save({"states": torch.cat([states[text] for text in texts]).cpu(),
                        "lengths": torch.tensor([len(states[text]) for text in texts])}, staging)
    except (OSError, RuntimeError):  # a full disk fails torch.save with a RuntimeError
        pass


def _encode(folder: str, texts: tuple[Text, ...], max_length: int, batch_size: int,
            trust_remote_code: bool, device: str) -> dict[Text, torch.Tensor]:
    """Each text's last-layer token states, in one fixed batch layout."""
    model, tokenizer = _encoder(folder, trust_remote_code, device)
    lengths = {text: len(tokenizer(text[0], text[1], truncation=True, max_length=max_length)["input_ids"]) for text in texts}
    ordered = sorted(texts, key=lambda text: (lengths[text], text[0], text[1] or ""))
    states: dict[Text, torch.Tensor] = {}
    with torch.inference_mode():
        for start in range(0, len(ordered), batch_size):
            batch = ordered[start:start + batch_size]
            firsts, seconds = [t[0] for t in batch], [t[1] for t in batch]
            encoded = tokenizer(firsts, seconds if any(s is not None for s in seconds) else None, truncation=True,
                                max_length=max_length, padding=True, return_tensors="pt").to(device)
            hidden = model(**encoded).last_hidden_state
            for row, text in enumerate(batch):
                states[text] = hidden[row, : lengths[text]].clone()
    return states


def token_states(folder: str, frames: Sequence[pd.DataFrame], max_length: int, batch_size: int = 64,
                 trust_remote_code: bool = False, *, encode_with: Sequence[pd.DataFrame] = (),
                 device: torch.device | str = "cpu") -> list[torch.Tensor]:
    """For each frame, its examples' token states as one zero-padded [examples, tokens, hidden] tensor on ``device``.

    The sentences of ``frames`` and ``encode_with`` are encoded together, once per process for the
    same set of sentences: pass the rows every run draws from, so runs that draw differently share it.
    """
    per_frame = [example_texts(frame) for frame in frames]
    known = {text for frame in encode_with for text in example_texts(frame)}
    everything = tuple(sorted(known.union(*per_frame), key=lambda t: (t[0], t[1] or "")))
    encoded = _encoded(folder, everything, max_length, batch_size, trust_remote_code, str(device))
    return [torch.nn.utils.rnn.pad_sequence([encoded[text] for text in texts], batch_first=True) for texts in per_frame]
