"""What a process keeps between fine-tuning runs: the tokenizer and the tokenized examples.

A packed worker (:mod:`seedscope.executors.packing`) or a sweep in one process runs many
seeds of one task and model; each used to load the tokenizer and tokenize its examples
again, seconds before any training (8,000 SST-2 sentences, a RoBERTa tokenizer). Here both are
kept per process: the tokenizer per checkpoint folder, the features per (tokenizer, model
kind, ``max_seq_length``, the frame's content), so runs whose seeds draw the same examples
share them and runs that draw others tokenize only theirs. The checkpoint's tensors are kept
beside them (:mod:`seedscope.runners.finetune.base_weights`). Features are never changed by a
run (the collator pads copies), so sharing them leaves every run as it would be alone.
"""

from __future__ import annotations

import functools
import hashlib
import pickle
from collections import OrderedDict

import pandas as pd

from seedscope.runners.checkpoints import load_tokenizer
from seedscope.runners.finetune.features import encode
from seedscope.runners.finetune.models import Kind

#: tokenized frames kept (a run uses two: its training and its evaluation examples)
KEPT_FRAMES = 8
_features: OrderedDict[tuple, list[dict]] = OrderedDict()


@functools.lru_cache(maxsize=2)
def tokenizer_of(folder: str, trust_remote_code: bool):
    """:func:`~seedscope.runners.checkpoints.load_tokenizer`, once per process and folder."""
    return load_tokenizer(folder, trust_remote_code)


def features_of(frame: pd.DataFrame, kind: Kind, tokenizer, max_length: int, regression: bool) -> list[dict]:
    """:func:`~seedscope.runners.finetune.features.encode`, kept per process for the same frame and tokenizer."""
    content = hashlib.sha256(pickle.dumps(frame, protocol=pickle.HIGHEST_PROTOCOL)).hexdigest()
    key = (tokenizer.name_or_path, type(tokenizer).__name__, len(tokenizer), kind, max_length, regression, content)
    if key in _features:
        _features.move_to_end(key)
        return _features[key]
    features = _features[key] = encode(frame, kind, tokenizer, max_length, regression)
    while len(_features) > KEPT_FRAMES:
        _features.popitem(last=False)
    return features
