"""The shipped presets, listed from their files with the first sentence of each description."""

from __future__ import annotations

import yaml

from seedscope.presets import PRESET_DIR, list_presets, preset_summaries


def test_every_shipped_file_is_listed_with_the_first_sentence_of_its_description():
    summaries = preset_summaries()
    assert list(summaries) == list_presets() == sorted(p.stem for p in PRESET_DIR.glob("*.yaml"))
    for name, summary in summaries.items():
        description = " ".join(yaml.safe_load((PRESET_DIR / f"{name}.yaml").read_text())["description"].split())
        assert description.startswith(summary) and summary.endswith(".") and len(summary) > 20
    assert summaries["roberta-large-paper"].startswith("The reference paper's RoBERTa-large protocol")
    assert "Run on a GPU" not in summaries["roberta-large-paper"]  # the second sentence


def test_a_new_preset_file_is_listed_without_further_code(tmp_path, monkeypatch):
    import seedscope.presets as presets

    (tmp_path / "mine.yaml").write_text("description: >-\n  My own settings. Second sentence.\ntasks: [rte]\n")
    (tmp_path / "bare.yaml").write_text("tasks: [rte]\n")
    monkeypatch.setattr(presets, "PRESET_DIR", tmp_path)
    assert presets.preset_summaries() == {"bare": "", "mine": "My own settings."}
