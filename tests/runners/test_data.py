"""Which examples a run uses: fixed subsets, data_split re-splits, label_choice subsets."""

import numpy as np
import pandas as pd

from seedscope.plan.hparams import FinetuneSettings
from seedscope.plan.seeds import FactorSeeds
from seedscope.runners.data import balanced_subset, run_examples, stratified_split
from seedscope.tasks import get_task, load_examples

RTE = get_task("rte")


def test_plain_run_uses_the_official_splits_and_first_rows(data_dir):
    settings = FinetuneSettings(max_train_examples=40, max_eval_examples=30)
    train, dev = run_examples(RTE, settings, FactorSeeds.tied(1), data_dir)
    assert train["example_id"].tolist() == [str(i) for i in range(40)]
    assert dev["example_id"].tolist() == [str(i) for i in range(30)]
    again = run_examples(RTE, settings, FactorSeeds.tied(2), data_dir)
    pd.testing.assert_frame_equal(train, again[0])


def test_resplit_is_stratified_and_depends_on_the_data_split_seed_only(data_dir):
    settings = FinetuneSettings(max_train_examples=200, max_eval_examples=50, resplit=True, test_fraction=0.2)
    seeds = FactorSeeds.tied(1)
    train, test = run_examples(RTE, settings, seeds, data_dir)
    assert len(train) + len(test) == 250 and set(train.example_id).isdisjoint(test.example_id)
    assert any(i.startswith("dev-") for i in train.example_id) and all(i[:4] in ("trai", "dev-") for i in test.example_id)
    pool = pd.concat([train, test])
    for code in (0, 1):
        share = (test.label == code).sum() / (pool.label == code).sum()
        assert abs(share - 0.2) < 0.01
    same = run_examples(RTE, settings, seeds.replace(data_order=9, model_init=9, label_choice=9), data_dir)
    pd.testing.assert_frame_equal(test, same[1])
    other = run_examples(RTE, settings, seeds.replace(data_split=2), data_dir)
    assert set(other[1].example_id) != set(test.example_id)
    assert train.index.is_monotonic_increasing  # pooled order kept: order belongs to data_order


def test_label_choice_is_class_balanced_and_seeded(data_dir):
    settings = FinetuneSettings(num_labelled=31)
    seeds = FactorSeeds.tied(4)
    train, _ = run_examples(RTE, settings, seeds, data_dir)
    assert train.label.value_counts().to_dict() == {0: 16, 1: 16}  # ceil(31 / 2) per class, as the reference
    assert run_examples(RTE, settings, seeds.replace(data_split=8), data_dir)[0].equals(train)
    assert not run_examples(RTE, settings, seeds.replace(label_choice=5), data_dir)[0].example_id.equals(train.example_id)


def test_helpers_on_hand_made_data():
    frame = pd.DataFrame({"label": [0] * 6 + [1] * 4})
    rng = np.random.default_rng(0)
    train, test = stratified_split(frame, 0.5, rng, frame.label.to_numpy())
    assert sorted(test.label.tolist()) == [0, 0, 0, 1, 1]
    small = balanced_subset(frame, 10, np.random.default_rng(0), frame.label.to_numpy())
    assert small.label.value_counts().to_dict() == {0: 5, 1: 4}  # the smaller class gives all it has
    assert len(balanced_subset(frame, 3, np.random.default_rng(0), None)) == 3


def test_the_candidate_rows_are_read_once_while_the_files_stay_the_same(tmp_path, data_dir, monkeypatch):
    import shutil

    from seedscope.runners import data

    folder = tmp_path / "data"
    shutil.copytree(data_dir / "glue" / "RTE", folder / "glue" / "RTE")
    reads = []
    monkeypatch.setattr(data, "load_examples", lambda *args: reads.append(args) or load_examples(*args))
    settings = FinetuneSettings(max_train_examples=20, max_eval_examples=10)
    first = data.candidate_examples(RTE, settings, folder)
    first[0].loc[0, "text"] = "changed by the caller"  # a caller's copy: the next run still gets the file's rows
    again = data.candidate_examples(RTE, settings, folder)
    assert len(reads) == 2 and again[0]["text"].iloc[0] != "changed by the caller"
    dev = folder / "glue" / "RTE" / "dev.tsv"
    dev.write_text("\n".join(dev.read_text().splitlines()[:6]) + "\n")  # the file changed: read again
    changed = data.candidate_examples(RTE, settings, folder)
    assert len(reads) == 4 and len(changed[1]) == 5 and changed[0].equals(again[0])
