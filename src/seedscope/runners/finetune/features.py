"""Tokenise example frames into model features, and pick the batch collator.

Features are plain dicts (one per example, unpadded); padding happens per batch in the
collator, as the ``padding`` hyper-parameter says: to the batch's longest sequence
(``dynamic``), to the next of a few fixed lengths (``buckets``, :mod:`.padding`), or to
``max_seq_length`` (``max_length``, alias ``pad_to_max_length``) as ``run_glue.py`` does by default.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

from seedscope.plan.hparams import FinetuneSettings
from seedscope.runners.finetune.models import Kind


def encode(frame: pd.DataFrame, kind: Kind, tokenizer, max_length: int, regression: bool) -> list[dict]:
    """One feature dict per row: ``input_ids`` etc. and ``labels``."""
    labels = frame["label"].astype(float if regression else int).tolist()
    if kind == "sequence":
        pairs = frame["text_pair"].tolist() if frame["text_pair"].notna().any() else None
        encoded = tokenizer(frame["text"].tolist(), pairs, truncation=True, max_length=max_length)
        keys = list(encoded.keys())
        return [{**{k: encoded[k][i] for k in keys}, "labels": labels[i]} for i in range(len(frame))]
    if kind == "choice_head":
        return [
            {**_choice_pairs(tokenizer, text, choices, max_length), "labels": label}
            for text, choices, label in zip(frame["text"], frame["choices"], labels)
        ]
    return [
        {**_choice_continuations(tokenizer, text, choices, max_length), "labels": label}
        for text, choices, label in zip(frame["text"], frame["choices"], labels)
    ]


def _choice_pairs(tokenizer, text: str, choices: list[str], max_length: int) -> dict:
    encoded = tokenizer([text] * len(choices), list(choices), truncation=True, max_length=max_length)
    return {key: list(values) for key, values in encoded.items()}


def _choice_continuations(tokenizer, text: str, choices: list[str], max_length: int) -> dict:
    """Context + " choice" token ids per candidate; the context is cut from the left to fit."""
    context = tokenizer(text)["input_ids"]
    continuations = tokenizer([" " + c for c in choices], add_special_tokens=False)["input_ids"]
    input_ids, choice_mask = [], []
    for continuation in continuations:
        continuation = continuation[: max_length - 1]
        kept = context[-(max_length - len(continuation)) :]
        input_ids.append(kept + continuation)
        choice_mask.append([0] * len(kept) + [1] * len(continuation))
    return {"input_ids": input_ids, "choice_mask": choice_mask}


def collator(kind: Kind, tokenizer, settings: FinetuneSettings, lengths: Sequence[int] | None = None):
    """The batch collator of the run's ``padding`` on its device; ``buckets`` draws its ladder from ``lengths``
    (the tokens of every example the collator will see, :func:`~seedscope.runners.finetune.padding.example_lengths`)."""
    from seedscope.runners.environment import compute_device

    padding = settings.padding_for(compute_device(settings.device).type)
    if padding == "buckets":
        from seedscope.runners.finetune.padding import BucketPadding, bucket_ladder

        if not lengths:
            raise ValueError("bucket padding needs the lengths of the run's examples")
        return BucketPadding(lambda length: padded_to(kind, tokenizer, length),
                             bucket_ladder(lengths, settings.max_seq_length), padded_to(kind, tokenizer, None))
    return padded_to(kind, tokenizer, settings.max_seq_length if padding == "max_length" else None)


def padded_to(kind: Kind, tokenizer, length: int | None):
    """The collator of ``kind`` padding every batch to ``length`` (None: to the batch's longest row)."""
    from transformers import DataCollatorForMultipleChoice, DataCollatorWithPadding

    padding = "max_length" if length else "longest"
    if kind == "sequence":
        return DataCollatorWithPadding(tokenizer, padding=padding, max_length=length)
    if kind == "choice_head":
        return DataCollatorForMultipleChoice(tokenizer, padding=padding, max_length=length)
    from seedscope.runners.finetune.choice_lm import ChoiceLMCollator

    return ChoiceLMCollator(tokenizer.pad_token_id, length)
