"""Parquet files decoded ahead of the reader: the same tables, a bounded memory, never a wait without end."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seedscope import parquet_ahead


@pytest.fixture
def files(tmp_path):
    paths = []
    for i in range(6):
        path = tmp_path / f"seed{i}.parquet"
        pq.write_table(pa.table({"example_id": [f"e{j}" for j in range(100)], "prediction": [i] * 100,
                                 "text": ["a long text " * 10] * 100}), path)
        paths.append(path)
    return paths


def test_each_file_is_taken_as_pyarrow_reads_it(files):
    with parquet_ahead.decoding_ahead(files):
        for path in files:
            assert parquet_ahead.take(path).equals(pq.read_table(path))
        assert parquet_ahead.take(files[0]) is None  # taken once: a second read goes to the file


def test_a_reader_that_goes_its_own_way_is_never_kept_waiting(files, tmp_path):
    with parquet_ahead.decoding_ahead(files):
        assert parquet_ahead.take(files[-1]).equals(pq.read_table(files[-1]))  # past the others: they are dropped
        assert parquet_ahead.take(files[0]) is None
        assert parquet_ahead.take(tmp_path / "other.parquet") is None  # never asked for


def test_the_tables_held_for_the_reader_stay_within_the_budget(files, monkeypatch):
    one = pq.read_table(files[0]).nbytes
    monkeypatch.setattr(parquet_ahead, "BUDGET", 2 * one)
    with parquet_ahead.decoding_ahead(files):
        ahead = parquet_ahead._current
        with ahead.condition:
            ahead.condition.wait_for(lambda: ahead.done >= 1)
        assert ahead.done == 1 and ahead._held() == 2 * one  # it waits for the reader: two tables fill the budget
        for path in files:
            assert parquet_ahead.take(path) is not None
            assert ahead._held() <= 2 * one


def test_a_file_it_cannot_decode_is_left_to_the_reader(files):
    files[2].write_bytes(b"not parquet")
    with parquet_ahead.decoding_ahead(files):
        assert [parquet_ahead.take(path) is None for path in files] == [False, False, True, False, False, False]


def test_only_parquet_files_are_decoded_ahead(files, tmp_path):
    text = tmp_path / "seed.csv"
    text.write_text("example_id,prediction\ne0,1\n")
    with parquet_ahead.decoding_ahead([*files, text]):
        assert parquet_ahead._current is None and parquet_ahead.take(files[0]) is None
    with parquet_ahead.decoding_ahead(files[:1]):  # one file: nothing to overlap
        assert parquet_ahead._current is None
    assert parquet_ahead._current is None


def test_the_same_files_started_again_go_on_decoding(files):
    """The command line starts the files before the command loads; the command starting them again carries on."""
    with parquet_ahead.decoding_ahead(files):
        ahead = parquet_ahead._current
        parquet_ahead.start(list(files))
        assert parquet_ahead._current is ahead
        parquet_ahead.start(files[:3])  # other files: the first decoding stops, the new one starts
        assert parquet_ahead._current is not ahead and ahead.stopped
        assert parquet_ahead.take(files[0]).equals(pq.read_table(files[0]))
    assert parquet_ahead._current is None
