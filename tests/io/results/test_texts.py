"""Example texts from the task's local dev file: the table column and the report's lookup."""

from __future__ import annotations

import pandas as pd

import seedscope
from seedscope.io.results.texts import attach_texts, task_texts
from seedscope.tasks import DATA_DIR_ENV, load_examples


#: two runs of RTE's first ten dev examples (the predictions do not matter here)
FIGURE1 = pd.DataFrame({"run": ["42"] * 10 + ["52"] * 10, "example_id": list(range(10)) * 2,
                        "prediction": [1] * 6 + [0] * 4 + [0] * 4 + [1] * 6, "label": 1})


def test_task_texts_are_read_from_local_data_only(data_dir, monkeypatch):
    monkeypatch.delenv(DATA_DIR_ENV, raising=False)
    assert task_texts("rte") is None  # no local data: a report never downloads
    assert task_texts("no-such-task", data_dir) is None
    texts = task_texts("rte", data_dir)
    dev = load_examples("rte", "validation", data_dir).set_index("example_id")
    assert texts["text"].tolist() == dev["text"].tolist() and texts["text_pair"].tolist() == dev["text_pair"].tolist()
    monkeypatch.setenv(DATA_DIR_ENV, str(data_dir))
    assert task_texts("rte") is not None


def test_attach_texts_from_the_real_dev_file(data_dir, monkeypatch):
    monkeypatch.delenv("SEEDSCOPE_DATA_DIR", raising=False)
    table = FIGURE1.assign(task="rte")
    with_text, notes = attach_texts(table, data_dir)
    assert notes == [] and len(with_text) == len(table)
    first = with_text.loc[with_text["example_id"] == "0", "text"].iloc[0]
    assert first.startswith("Dana Reeve, the widow of the actor Christopher Reeve") and " ‖ Christopher Reeve had an accident." in first
    top = seedscope.analyze_groups(with_text)[("rte", None)].most_unstable(1)
    assert top["text"].iloc[0] == first
    # no data folder, unknown task, or text already there: the table comes back as it was
    assert attach_texts(table)[0] is table
    unknown = FIGURE1.assign(task="mine")
    assert attach_texts(unknown, data_dir)[0] is unknown
    assert attach_texts(with_text, data_dir)[0] is with_text


def test_attach_texts_reports_missing_files(tmp_path):
    _, notes = attach_texts(FIGURE1, tmp_path, task="rte")
    assert len(notes) == 1 and notes[0].startswith("no example texts for rte")
