"""The columnar fast path gives exactly what the long-table readers and align_runs give, or steps aside."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from seedscope.io import read_aligned_runs, read_predictions
from seedscope.predictions import align_runs


def write_runs(folder: Path, frames: list[pd.DataFrame], suffix: str) -> list[Path]:
    paths = []
    for i, frame in enumerate(frames):
        path = folder / f"seed{i}.{suffix}"
        if suffix == "parquet":
            frame.to_parquet(path, index=False)
        else:
            frame.to_csv(path, index=False, sep="\t" if suffix == "tsv" else ",")
        paths.append(path)
    return paths


def random_runs(rng, n_runs: int, n: int, *, classes, ids, labels: bool = True, shuffle: bool = True,
                missing_labels: bool = False) -> list[pd.DataFrame]:
    gold = rng.choice(classes, n)
    frames = []
    for _ in range(n_runs):
        frame = pd.DataFrame({"id": ids, "prediction": np.where(rng.random(n) < 0.6, gold, rng.choice(classes, n))})
        if labels:
            frame["label"] = pd.Series(gold, dtype=object)
            if missing_labels:
                frame.loc[rng.random(n) < 0.2, "label"] = None
        frames.append(frame.sample(frac=1, random_state=int(rng.integers(1000))) if shuffle else frame)
    return frames


def assert_same(fast, slow):
    assert fast is not None
    assert fast.runs == slow.runs and fast.classes == slow.classes and fast.task_type == slow.task_type
    assert fast.example_ids.tolist() == slow.example_ids.tolist()
    np.testing.assert_array_equal(fast.predictions, slow.predictions)
    if slow.labels is None:
        assert fast.labels is None
    else:
        np.testing.assert_array_equal(fast.labels, slow.labels)
    assert fast.predictions.dtype == np.int8


@pytest.mark.parametrize("suffix", ["parquet", "csv", "tsv"])
@pytest.mark.parametrize("case", range(4))
def test_random_files_align_exactly_as_the_long_table_path(tmp_path, suffix, case):
    rng = np.random.default_rng(case)
    n = int(rng.integers(5, 300))
    classes = [["0", "1"], ["entailment", "neutral", "contradiction"], [0, 1, 2, 3], ["yes", "no"]][case]
    ids = [f"q{i:04d}" for i in range(n)] if case % 2 else list(rng.permutation(n) * 7)
    frames = random_runs(rng, int(rng.integers(2, 6)), n, classes=classes, ids=ids, labels=case != 3,
                         missing_labels=case == 2)
    paths = write_runs(tmp_path, frames, suffix)
    assert_same(read_aligned_runs(paths), align_runs(read_predictions(paths)))


@pytest.mark.parametrize("classes", [[0, 2, 5], [-128, -120, 3], [-3, 40, 90], [7]])
@pytest.mark.parametrize("ids", ["int", "text"])
def test_chunked_parquet_with_integer_classes_aligns_exactly(tmp_path, classes, ids):
    """Files read in several chunks, integer classes with gaps (found by comparisons, or by a bincount over a wide
    span), stored as narrow int8: the same codes as the long-table path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(len(classes) + abs(classes[0]))
    n = 700
    example_ids = rng.permutation(n) * 3 if ids == "int" else np.array([f"e{i}" for i in rng.permutation(n)])
    frames = random_runs(rng, 4, n, classes=classes, ids=example_ids)
    paths = []
    for i, frame in enumerate(frames):
        paths.append(tmp_path / f"seed{i}.parquet")
        table = pa.table({"id": frame["id"].to_numpy(), "prediction": frame["prediction"].to_numpy().astype(np.int8),
                          "label": frame["label"].to_numpy().astype(np.int8)})
        pq.write_table(table, paths[-1], row_group_size=128)
    assert pq.read_table(paths[0]).column("prediction").num_chunks > 1
    assert_same(read_aligned_runs(paths), align_runs(read_predictions(paths)))


def test_a_class_first_predicted_far_into_a_file_is_found(tmp_path):
    """Classes are looked for in the first rows first: one that only the last row of a run predicts is still found
    (and one that no row predicts is still absent)."""
    n = 10_000
    gold = np.where(np.arange(n) % 2 == 0, 0, 4)
    frames = []
    for late in (n - 1, n - 2):
        prediction = gold.copy()
        prediction[late] = 2
        frames.append(pd.DataFrame({"id": np.arange(n), "prediction": prediction, "label": gold}))
    paths = write_runs(tmp_path, frames, "parquet")
    fast = read_aligned_runs(paths)
    assert fast.classes == [0, 2, 4]
    assert_same(fast, align_runs(read_predictions(paths)))


def test_csv_ids_keep_their_leading_zeros(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("\ufeffid,prediction,label\r007,1,1\r8,0,1\r")
    b.write_text("id,prediction,label\n8,1,1\n007,1,1\n")
    fast = read_aligned_runs([a, b])
    assert fast.example_ids.tolist() == ["007", "8"] and fast.predictions.tolist() == [[1, 0], [1, 1]]
    assert_same(fast, align_runs(read_predictions([a, b])))


def test_integer_and_whole_float_ids_stay_numbers(tmp_path):
    ints = pd.DataFrame({"id": [7, 10, 9], "prediction": [1, 0, 1], "label": [1, 1, 0]})
    shuffled = ints.iloc[[2, 0, 1]]
    paths = write_runs(tmp_path, [ints, shuffled.assign(id=shuffled["id"].astype(float))], "parquet")
    fast = read_aligned_runs(paths)
    assert fast.example_ids.dtype == np.int64 and fast.example_ids.tolist() == [10, 7, 9]  # in their text order
    assert fast.predictions.tolist() == [[0, 1, 1], [0, 1, 1]]
    assert_same(fast, align_runs(read_predictions(paths)))


def test_integer_ids_beside_text_ids_align_as_text(tmp_path):
    """7 in one run and "7" in another are one id: mixed kinds go to the long table, which reads them as text."""
    ints = pd.DataFrame({"id": [7, 10, 9], "prediction": [1, 0, 1], "label": [1, 1, 0]})
    shuffled = ints.iloc[[2, 0, 1]]
    paths = write_runs(tmp_path, [ints, shuffled.assign(id=shuffled["id"].astype(str)),
                                  shuffled.assign(id=shuffled["id"].astype(float), prediction=[0, 0, 0])], "parquet")
    assert read_aligned_runs(paths) is None
    aligned = align_runs(read_predictions(paths))
    assert aligned.example_ids.tolist() == ["10", "7", "9"]
    assert aligned.predictions.tolist() == [[0, 1, 1], [0, 1, 1], [0, 0, 0]]


STEP_ASIDE = {
    "duplicate id": ["id,prediction\n1,a\n1,b\n", "id,prediction\n1,a\n2,b\n"],
    "different ids": ["id,prediction\n1,a\n2,b\n", "id,prediction\n1,a\n3,b\n"],
    "missing prediction": ["id,prediction\n1,a\n2,\n", "id,prediction\n1,a\n2,b\n"],
    "regression values": ["id,prediction\n1,0.5\n2,1.5\n", "id,prediction\n1,0.7\n2,1.2\n"],
    "probability columns": ["id,prediction,prob_a,prob_b\n1,a,0.9,0.1\n", "id,prediction,prob_a,prob_b\n1,b,0.2,0.8\n"],
    "run column": ["seed,id,prediction\n1,1,a\n", "seed,id,prediction\n2,1,a\n"],
    "task column": ["task,id,prediction\nrte,1,a\n", "task,id,prediction\nrte,1,b\n"],
    "gold labels disagree": ["id,prediction,label\n1,a,a\n", "id,prediction,label\n1,a,b\n"],
}


@pytest.mark.parametrize("case", list(STEP_ASIDE))
def test_steps_aside_for_the_long_table_readers(tmp_path, case):
    paths = []
    for i, text in enumerate(STEP_ASIDE[case]):
        paths.append(tmp_path / f"r{i}.csv")
        paths[-1].write_text(text)
    assert read_aligned_runs(paths) is None


def test_options_that_change_what_a_row_means_step_aside(tmp_path):
    paths = write_runs(tmp_path, random_runs(np.random.default_rng(0), 2, 10, classes=[0, 1], ids=list(range(10))), "csv")
    assert read_aligned_runs(paths) is not None
    for option in ({"task": "rte"}, {"run_column": "id"}, {"task_type": "regression"}, {"cluster_column": "id"}):
        assert read_aligned_runs(paths, **option) is None
    assert read_aligned_runs(paths[:1]) is None  # one run: the long-table path says why that is not enough
