"""lm-eval --log_samples of tasks with repeats as sampled generations, read from files lm-eval 0.4.13 wrote
(tests/io/fixtures/lm_eval_repeats: 6 docs, 4 generations each, two sampling seeds)."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import read_predictions, read_samples

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval_repeats"
RUNS = [FIXTURES / "seed1", FIXTURES / "seed2"]


def records(run: Path, task: str) -> list[dict]:
    (path,) = run.glob(f"samples_{task}_2*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def copy(tmp_path: Path, run: Path = RUNS[0]) -> Path:
    target = tmp_path / run.name
    shutil.copytree(run, target)
    return target


def test_each_doc_holds_its_repeats_as_samples_of_the_run():
    table = read_samples(RUNS, task="sst2_sampled_regex")
    assert sorted(table["run"].unique()) == ["seed1", "seed2"] and len(table) == 2 * 6 * 4
    assert table.groupby(["run", "example_id"])["sample"].apply(sorted).map(list).map([0, 1, 2, 3].__eq__).all()
    first = records(RUNS[0], "sst2_sampled_regex")[0]
    rows = table[(table["run"] == "seed1") & (table["example_id"] == str(first["doc_id"]))]
    assert rows["text"].tolist() == first["resps"][0] and set(rows["label"]) == {first["target"]}


@pytest.mark.parametrize("task", ["sst2_sampled", "sst2_sampled_regex"])
def test_the_first_samples_verdict_is_lm_evals_own_exact_match(task):
    """lm-eval scores only the first answer (take_first): seedscope's verdict on sample 0 must be that score."""
    table = read_samples(RUNS, task=task).set_index(["run", "example_id", "sample"])
    for run in RUNS:
        for record in records(run, task):
            if record["filter"] not in ("none", "first"):
                continue
            row = table.loc[(run.name, str(record["doc_id"]), 0)]
            assert row["correct"] == record["exact_match"] and row["prediction"] == record["filtered_resps"][0]


def test_the_regex_extracts_each_answer_and_the_vote_is_lm_evals_majority():
    table = read_samples(RUNS, task="sst2_sampled_regex", filter="vote")
    assert "Positive" in set(table["prediction"]) and "[invalid]" in set(table["prediction"])
    row = table[table["prediction"] == "Positive"].iloc[0]
    assert row["correct"] == (row["label"] == "positive")  # ignore_case: true
    for run in RUNS:
        for record in records(run, "sst2_sampled_regex"):
            if record["filter"] == "vote":
                answers = table[(table["run"] == run.name) & (table["example_id"] == str(record["doc_id"]))]
                assert Counter(answers["prediction"]).most_common(1)[0][0] == record["filtered_resps"][0]


def test_without_the_regex_the_raw_answers_are_compared_as_the_task_does():
    """The default filter keeps each answer as generated: " positive" (leading space) is not "positive"."""
    table = read_samples(RUNS, task="sst2_sampled")
    assert " positive" in set(table["prediction"]) and not table["correct"].any()


def test_filters_are_a_note_and_an_unknown_one_an_error():
    table = read_samples(RUNS, task="sst2_sampled_regex")
    assert any("filters first, vote; each sample is judged through 'first'" in n for n in table.attrs["notes"])
    with pytest.raises(SeedscopeError, match=r"has no filter 'strict' \(filters: first, vote\)"):
        read_samples(RUNS, task="sst2_sampled_regex", filter="strict")


def test_several_tasks_need_task():
    with pytest.raises(SeedscopeError, match=r"samples of 2 tasks \(sst2_sampled, sst2_sampled_regex\).*--task"):
        read_samples(RUNS)


def test_the_prediction_reader_still_reads_the_first_answer():
    table = read_predictions(RUNS, task="sst2_sampled_regex", filter="first")
    assert len(table) == 12 and set(table["prediction"]) <= {"positive", "negative", "Positive", "Negative", "[invalid]"}


def test_a_doc_with_fewer_repeats_is_a_note_and_kept(tmp_path):
    run = copy(tmp_path)
    (path,) = run.glob("samples_sst2_sampled_regex_*.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for record in lines:
        if record["doc_id"] == 2:
            record["resps"] = [record["resps"][0][:2]]
    path.write_text("".join(json.dumps(record) + "\n" for record in lines))
    table = read_samples(run, task="sst2_sampled_regex")
    assert table.groupby("example_id").size().to_dict() == {"0": 4, "1": 4, "2": 2, "3": 4, "4": 4, "5": 4}
    (note,) = [n for n in table.attrs["notes"] if "different numbers of samples" in n]
    assert "(2 to 4; 1 of 6 hold fewer than 4, e.g. example '2' of run 'seed1' with 2)" in note


def _no_results(run: Path) -> str:
    next(run.glob("results_*.json")).unlink()
    return r"no lm-eval results file \(results_<datetime>\.json\) beside it"


def _bleu(run: Path) -> str:
    results = next(run.glob("results_*.json"))
    document = json.loads(results.read_text())
    document["configs"]["sst2_sampled_regex"]["metric_list"] = [{"metric": "bleu"}]
    results.write_text(json.dumps(document))
    return r"task sst2_sampled_regex scores with bleu; seedscope judges each sampled answer with exact_match only"


def _map_filter(run: Path) -> str:
    results = next(run.glob("results_*.json"))
    document = json.loads(results.read_text())
    document["configs"]["sst2_sampled_regex"]["filter_list"][0]["filter"].insert(1, {"function": "map"})
    results.write_text(json.dumps(document))
    return r"filter 'first' has a 'map' step, which seedscope cannot apply to each sampled answer"


def _broken_regex(run: Path) -> str:
    results = next(run.glob("results_*.json"))
    document = json.loads(results.read_text())
    document["configs"]["sst2_sampled_regex"]["filter_list"][0]["filter"][0]["regex_pattern"] = "(positive"
    results.write_text(json.dumps(document))
    return r"filter 'first': its regex step cannot be applied \(missing \), unterminated subpattern"


def _multiple_choice(run: Path) -> str:
    results = next(run.glob("results_*.json"))
    document = json.loads(results.read_text())
    document["configs"]["sst2_sampled_regex"]["output_type"] = "multiple_choice"
    results.write_text(json.dumps(document))
    return r"task sst2_sampled_regex is multiple_choice, whose answers are log-likelihoods"


def _resps_not_text(run: Path) -> str:
    path = next(run.glob("samples_sst2_sampled_regex_*.jsonl"))
    lines = path.read_text().splitlines()
    record = json.loads(lines[1])
    record["resps"] = [[None, "positive"]]
    path.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    return r"samples_sst2_sampled_regex_.*\.jsonl line 2: resps holds None, not a generated text"


def _truncated(run: Path) -> str:
    path = next(run.glob("samples_sst2_sampled_regex_*.jsonl"))
    path.write_bytes(path.read_bytes()[:700])
    return r"samples_sst2_sampled_regex_.*\.jsonl line 1: not valid JSON"


@pytest.mark.parametrize("damage", [_no_results, _bleu, _map_filter, _broken_regex, _multiple_choice, _resps_not_text, _truncated])
def test_damaged_or_unsupported_files_are_one_clear_error(damage, tmp_path):
    run = copy(tmp_path)
    message = damage(run)
    with pytest.raises(SeedscopeError, match=message):
        read_samples(run, task="sst2_sampled_regex")
