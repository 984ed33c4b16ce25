"""A GGUF checkpoint's converted folder: made once, and a conversion another process finished first is taken."""

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
