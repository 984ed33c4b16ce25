"""A GGUF checkpoint's converted folder: made once, its tokenizer's special tokens the file's, and a conversion
another process finished first is taken."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from seedscope.config import resolve_model
from seedscope.runners import checkpoints


def test_a_conversion_another_process_finished_first_is_taken(tmp_path, monkeypatch):
    monkeypatch.setenv(checkpoints.CACHE_ENV, str(tmp_path))
    replace = os.replace

    def finished_elsewhere_meanwhile(source, target):
        if Path(target).parent.name == "gguf":  # the other process's complete folder lands first
            shutil.copytree(source, target)
        replace(source, target)

    monkeypatch.setattr(os, "replace", finished_elsewhere_meanwhile)
    folder = checkpoints.gguf_folder(Path(resolve_model("smollm2-135m-instruct")))
    assert (folder / "config.json").is_file()
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no staging folder left behind


def test_the_converted_tokenizer_ends_sequences_with_the_token_the_gguf_file_names(smollm2_folder):
    import gguf
    from transformers import AutoConfig

    reader = gguf.GGUFReader(resolve_model("smollm2-135m-instruct"))
    field = reader.fields["tokenizer.ggml.eos_token_id"]
    eos = int(field.parts[field.data[0]][0])
    tokenizer = checkpoints.load_tokenizer(str(smollm2_folder))
    assert (tokenizer.eos_token_id, tokenizer.eos_token) == (eos, "<|im_end|>")
    assert AutoConfig.from_pretrained(smollm2_folder).eos_token_id == eos
    assert tokenizer.bos_token == "<|im_start|>"
