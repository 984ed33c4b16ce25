"""lighteval details with n generations per document as sampled generations, read from files lighteval 0.13.0 wrote
(tests/io/fixtures/lighteval_sampled: 6 documents, 4 generations each, two runs)."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seedscope.errors import SeedscopeError, UnevenSamplesWarning
from seedscope.io import detect_format, read_predictions, read_samples
from seedscope.metrics.sampled import pass_at_k

DETAILS = Path(__file__).resolve().parents[1] / "fixtures" / "lighteval_sampled" / "details"
RUNS = [DETAILS / "run1", DETAILS / "run2"]
METRICS = ("pass@k:k=1&n=4", "pass@k:k=2&n=4", "avg@n:n=4", "maj@n:n=4")


def rows(run: Path) -> list[dict]:
    (path,) = run.glob("*.parquet")
    return pq.read_table(path).to_pylist()


def rewrite(run: Path, tmp_path: Path, change) -> Path:
    """A copy of ``run`` whose rows ``change`` edited (the schema as lighteval wrote it)."""
    (path,) = run.glob("*.parquet")
    table = pq.read_table(path)
    records = table.to_pylist()
    change(records)
    target = tmp_path / run.name
    target.mkdir()
    pq.write_table(pa.Table.from_pylist(records, schema=table.schema), target / path.name)
    return target


def test_each_document_holds_its_n_generations_as_samples():
    table = read_samples(RUNS)
    assert detect_format(RUNS[0]) == "lighteval"
    assert sorted(table["run"].unique()) == ["run1", "run2"] and len(table) == 2 * 6 * 4
    assert table.groupby(["run", "example_id"])["sample"].nunique().eq(4).all()
    for run in RUNS:
        for record in rows(run):
            samples = table[(table["run"] == run.name) & (table["example_id"] == str(record["doc"]["id"]))]
            assert samples["text"].tolist() == record["model_response"]["text"]
            assert set(samples["label"]) == {record["doc"]["choices"][record["doc"]["gold_index"]]}
    assert set(table["task"]) == {"sst2_sampled|0"}


def test_two_runs_drew_their_own_samples():
    table = read_samples(RUNS)
    assert table[table["run"] == "run1"]["text"].tolist() != table[table["run"] == "run2"]["text"].tolist()


@pytest.mark.parametrize("metric", METRICS)
def test_the_verdicts_give_lightevals_own_value_of_every_sampling_metric(metric):
    """Each metric is checked while reading; here again, from the table: avg@n and pass@k from the verdicts."""
    table = read_samples(RUNS, metric=metric)
    for run in RUNS:
        for record in rows(run):
            verdicts = table[(table["run"] == run.name) & (table["example_id"] == str(record["doc"]["id"]))]["correct"]
            if metric.startswith("avg@n"):
                assert verdicts.mean() == pytest.approx(record["metric"][metric])
            if metric.startswith("pass@k"):
                k = int(metric.split("k=")[1][0])
                assert pass_at_k(4, int(verdicts.sum()), k)[0] == pytest.approx(record["metric"][metric])


def test_a_stripped_answer_is_right_and_a_sentence_is_not():
    table = read_samples(RUNS)
    assert table["correct"].between(0, 1).all() and 0 < table["correct"].mean() < 1
    assert not table[table["text"].str.len() > 12]["correct"].any()  # "It's absolutely negative." is not "negative"
    assert "each sample judged as pass@k:k=1&n=4" in table.attrs["notes"][0]




def test_the_prediction_reader_still_reads_one_value_per_document():
    table = read_predictions(RUNS, metric="avg@n:n=4")
    samples = read_samples(RUNS, metric="avg@n:n=4")
    assert len(table) == 12 and table.attrs["regression_tasks"] == ["sst2_sampled|0"]
    means = samples.groupby(["run", "example_id"])["correct"].mean()
    assert table.set_index(["run", "example_id"])["prediction"].sort_index().tolist() == pytest.approx(means.tolist())


def wrong(record: dict) -> list[int]:
    """The positions of the answers lighteval's pass@k judges wrong (stripped, unlike the gold)."""
    gold = record["doc"]["choices"][record["doc"]["gold_index"]]
    return [i for i, text in enumerate(record["model_response"]["text"]) if text.strip() != gold]


def test_a_metric_that_judges_samples_otherwise_is_refused_with_the_document_named(tmp_path):
    def one_more_right(records):  # as a normalising metric would have scored one more answer right
        number = next(n for n, record in enumerate(records) if wrong(record))
        records[number]["metric"]["avg@n:n=4"] += 0.25

    run = rewrite(RUNS[0], tmp_path, one_more_right)
    with pytest.raises(SeedscopeError, match=r"row \d: metric avg@n:n=4 is [\d.]+, but comparing each of its 4 answers "
                                             r"with the gold answer '\w+' gives [\d.]+: the task judges samples"):
        read_samples(run, metric="avg@n:n=4")


def _no_metric_value(records):
    records[0]["metric"]["pass@k:k=1&n=4"] = None


def _no_texts(records):
    records[2]["model_response"]["text"] = []
    records[2]["model_response"]["text_post_processed"] = []


@pytest.mark.parametrize("change, message", [
    (_no_metric_value, r"row 1: metric pass@k:k=1&n=4 is None, not a number"),
    (_no_texts, r"row 3: model_response 'text' is empty"),
])
def test_damaged_details_are_one_clear_error(change, message, tmp_path):
    with pytest.raises(SeedscopeError, match=message):
        read_samples(rewrite(RUNS[0], tmp_path, change))


def test_a_document_with_fewer_generations_is_kept_with_a_note(tmp_path):
    """lighteval's pass@k divides by its n even when a document has fewer answers; the values still agree."""
    def drop_a_wrong_answer(records):
        record = next(record for record in records if wrong(record))
        dropped = wrong(record)[0]
        for key in ("text", "text_post_processed"):
            record["model_response"][key] = [t for i, t in enumerate(record["model_response"][key]) if i != dropped]

    with pytest.warns(UnevenSamplesWarning, match=r"\(3 to 4; 1 of 6 hold fewer than 4"):
        table = read_samples(rewrite(RUNS[0], tmp_path, drop_a_wrong_answer))
    assert sorted(table.groupby("example_id").size().tolist()) == [3, 4, 4, 4, 4, 4]


def test_a_multiple_choice_details_file_has_no_samples_to_read():
    multiple_choice = DETAILS.parents[1] / "lighteval" / "details" / "seed1"
    with pytest.raises(SeedscopeError, match=r"no metric is a sampling metric whose per-sample verdicts seedscope "
                                             r"knows \(pass@k, avg@n, maj@n; the file has acc\)"):
        read_samples(multiple_choice)


def test_a_cut_file_and_an_unknown_metric_are_one_clear_error(tmp_path):
    (path,) = RUNS[0].glob("*.parquet")
    cut = tmp_path / path.name
    cut.write_bytes(path.read_bytes()[:2000])
    with pytest.raises(SeedscopeError, match=r"is not a readable lighteval details file"):
        read_samples(cut, format="lighteval")
    with pytest.raises(SeedscopeError, match=r"no metric 'bleu' \(metrics: pass@k:k=1&n=4, pass@k:k=2&n=4, avg@n:n=4"):
        read_samples(RUNS, metric="bleu")
