"""A process's second fine-tuning run of one task and model reuses the tokenized examples and the
checkpoint's tensors, and predicts exactly what a fresh process would."""

from __future__ import annotations

import safetensors.torch

from seedscope.plan import RunSpec
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.finetune import base_weights, process_cache
from seedscope.runners.finetune import runner as finetune

SMALL = {"max_train_examples": 32, "max_eval_examples": 16, "max_steps": 2, "per_device_train_batch_size": 8,
         "max_seq_length": 48}


def _run(model, data_dir, seed: int):
    return finetune.run(RunSpec("sst2", str(model), FactorSeeds.tied(seed), hparams=SMALL), data_dir)


def _forget() -> None:
    """Drop what the process kept, as a fresh process starts."""
    base_weights.checkpoint_tensors.cache_clear()
    process_cache.tokenizer_of.cache_clear()
    process_cache._features.clear()


def test_a_second_run_reads_and_tokenizes_nothing_and_predicts_as_a_fresh_process(tiny_bert, data_dir, monkeypatch):
    _forget()
    calls = {"encode": 0, "read": 0, "tokenizer": 0}

    def counting(name, function):
        def counted(*args, **kwargs):
            calls[name] += 1
            return function(*args, **kwargs)
        return counted

    monkeypatch.setattr(process_cache, "encode", counting("encode", process_cache.encode))
    monkeypatch.setattr(process_cache, "load_tokenizer", counting("tokenizer", process_cache.load_tokenizer))
    monkeypatch.setattr(safetensors.torch, "load_file", counting("read", safetensors.torch.load_file))
    _run(tiny_bert, data_dir, 1)
    assert calls == {"encode": 2, "read": 1, "tokenizer": 1}  # the first run: training and dev examples, one file
    second = _run(tiny_bert, data_dir, 2)
    assert calls == {"encode": 2, "read": 1, "tokenizer": 1}  # the second: nothing read or tokenized again
    _forget()
    fresh = _run(tiny_bert, data_dir, 2)
    assert calls == {"encode": 4, "read": 2, "tokenizer": 2}
    assert second.predictions.equals(fresh.predictions) and second.metrics == fresh.metrics


def test_kept_features_are_per_frame_and_bounded(tiny_bert):
    import pandas as pd

    _forget()
    tokenizer = process_cache.tokenizer_of(str(tiny_bert), False)
    frames = [pd.DataFrame({"text": [f"sentence {i}"], "text_pair": [None], "label": [0]}) for i in range(10)]
    first = process_cache.features_of(frames[0], "sequence", tokenizer, 16, False)
    assert process_cache.features_of(frames[0].copy(), "sequence", tokenizer, 16, False) is first  # same content
    assert process_cache.features_of(frames[0], "sequence", tokenizer, 8, False) is not first  # another length
    for frame in frames[1:]:
        process_cache.features_of(frame, "sequence", tokenizer, 16, False)
    assert len(process_cache._features) == process_cache.KEPT_FRAMES
