"""The frozen encoder's token states are kept in the cache: another process reads them back bit for bit instead of
encoding again; a damaged file is encoded again and replaced; a hub name is kept in this process only."""

from __future__ import annotations

import os
import stat

import pandas as pd
import pytest
import torch

from seedscope.runners.meta import token_states

FRAME = pd.DataFrame({"text": ["a fine film", "dull", "the plot holds together well"], "text_pair": [None] * 3})


@pytest.fixture
def cache(monkeypatch, tmp_path):
    """An empty cache folder, and no states kept in this process."""
    monkeypatch.setenv("SEEDSCOPE_CACHE", str(tmp_path / "cache"))
    token_states._encoded.cache_clear()
    yield tmp_path / "cache" / "token-states"
    token_states._encoded.cache_clear()


def encode_counted(monkeypatch) -> list[int]:
    calls: list[int] = []
    encode = token_states._encode
    monkeypatch.setattr(token_states, "_encode", lambda *a: calls.append(1) or encode(*a))
    return calls


def test_a_new_process_reads_the_kept_states_bit_for_bit(monkeypatch, cache, tiny_bert):
    old_umask = os.umask(0o027)
    try:
        (first,) = token_states.token_states(str(tiny_bert), [FRAME], max_length=16)
    finally:
        os.umask(old_umask)
    (kept,) = list(cache.iterdir())
    assert stat.S_IMODE(kept.stat().st_mode) == 0o640  # as the umask allows, like any file seedscope writes
    token_states._encoded.cache_clear()  # as in a new process (a parallel worker, a later study)
    calls = encode_counted(monkeypatch)
    (again,) = token_states.token_states(str(tiny_bert), [FRAME], max_length=16)
    assert calls == [] and torch.equal(first, again)
    token_states._encoded.cache_clear()
    token_states.token_states(str(tiny_bert), [FRAME], max_length=12)  # another length: other states
    assert calls == [1] and len(list(cache.iterdir())) == 2


@pytest.mark.parametrize("damage", [b"", b"not a torch file", None])
def test_a_damaged_file_is_encoded_again_and_replaced(monkeypatch, cache, tiny_bert, damage):
    (first,) = token_states.token_states(str(tiny_bert), [FRAME], max_length=16)
    (kept,) = list(cache.iterdir())
    if damage is None:  # a whole file that does not hold these texts' states
        torch.save({"states": torch.zeros(2, 32), "lengths": torch.tensor([1, 1])}, kept)
    else:
        kept.write_bytes(damage)
    token_states._encoded.cache_clear()
    calls = encode_counted(monkeypatch)
    (again,) = token_states.token_states(str(tiny_bert), [FRAME], max_length=16)
    assert calls == [1] and torch.equal(first, again)
    token_states._encoded.cache_clear()
    token_states.token_states(str(tiny_bert), [FRAME], max_length=16)
    assert calls == [1]  # the replaced file is read


def test_a_hub_name_is_not_kept_on_disk(cache):
    assert token_states.cache_file("sentence-transformers/all-MiniLM-L6-v2", (("a", None),), 16, 64, "cpu") is None


def test_an_unwritable_cache_is_skipped(monkeypatch, tmp_path, tiny_bert):
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("SEEDSCOPE_CACHE", str(blocker))  # a file where the folder should be
    token_states._encoded.cache_clear()
    try:
        (states,) = token_states.token_states(str(tiny_bert), [FRAME], max_length=16)
    finally:
        token_states._encoded.cache_clear()
    assert states.shape[0] == 3


def test_a_changed_checkpoint_or_thread_count_is_encoded_anew(monkeypatch, cache, tiny_bert, tmp_path):
    import shutil

    copy = tmp_path / "bert"
    shutil.copytree(tiny_bert, copy)
    token_states.token_states(str(copy), [FRAME], max_length=16)
    calls = encode_counted(monkeypatch)
    weights = next(copy.glob("*.safetensors"))
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))  # the checkpoint rewritten
    token_states._encoded.cache_clear()
    token_states.token_states(str(copy), [FRAME], max_length=16)
    assert calls == [1]
    threads = torch.get_num_threads()
    torch.set_num_threads(1 if threads > 1 else 2)  # sums split otherwise: other bits, other states
    try:
        token_states._encoded.cache_clear()
        token_states.token_states(str(copy), [FRAME], max_length=16)
    finally:
        torch.set_num_threads(threads)
    assert calls == [1, 1] and len(list(cache.iterdir())) == 3
