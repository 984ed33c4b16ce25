"""The readers' last bad inputs, each made from a real fixture at test time (the rules of test_bad_inputs.py).

A valid log in another layout is read as that log; a damaged framework file is named with what is wrong with
it; every message names the file; values that cannot be right are refused or left out with a note — and no
numpy RuntimeWarning ever reaches the user.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from seedscope.cli import main
from seedscope.errors import ReadingChoiceWarning, SeedscopeError
from seedscope.io import holds_run_scores, read_predictions

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_bad_inputs import CUTS, FIXTURES, HELM, INSPECT, LIGHTEVAL, _tables, analyze, assert_refused, copy, cut  # noqa: E402

# a RuntimeWarning is a bug that would print a source path before the message: here it fails the test
pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning")


def run(capsys, *argv) -> tuple[int, str]:
    """(exit status, stderr on one line) of any seedscope command."""
    capsys.readouterr()
    try:
        main([*map(str, argv)])
        code = 0
    except SystemExit as stop:
        code = stop.code or 0
    return code, " ".join(capsys.readouterr().err.split())


# --- inspect_ai: a valid .json log in any layout ------------------------------------------------------------------

DUMPS = {"json.dump": {}, "compact": {"separators": (",", ":")}, "sorted keys": {"sort_keys": True},
         "one-space indent": {"indent": 1}}


@pytest.mark.parametrize("layout", DUMPS)
def test_an_inspect_json_log_in_any_layout_is_a_log(layout, tmp_path, capsys):
    log = json.loads((INSPECT / "sst2-mock.json").read_text())
    paths = []
    for name in ("a", "b"):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(log, **DUMPS[layout]))
        paths.append(path)
    assert not holds_run_scores(paths)
    assert read_predictions(paths[0]).equals(read_predictions(INSPECT / "sst2-mock.json"))
    for command in (["analyze", paths[0]], ["compare", *paths]):
        code, err = run(capsys, *command, "--n-boot", "20")
        assert code == 0, err


def test_an_inspect_log_whose_samples_hold_doc_id_is_a_log(tmp_path):
    log = json.loads((INSPECT / "sst2-mock.json").read_text())
    for sample in log["samples"]:
        sample["metadata"] = {"doc_id": sample["id"], "resps": []}
    path = tmp_path / "log.json"
    path.write_text(json.dumps({"samples": log.pop("samples"), **log}))  # samples first: doc_id near the start
    assert read_predictions(path).equals(read_predictions(INSPECT / "sst2-mock.json"))


# --- lighteval: a damaged details file is named with what is wrong --------------------------------------------------

def _details(tmp_path: Path) -> tuple[Path, list[Path], Path]:
    root = copy(LIGHTEVAL, tmp_path / "details")
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    return root, folders, next(folders[0].glob("*.parquet"))


def _drop(column: str):
    return lambda path: pq.write_table(pq.read_table(path).drop([column]), path)


DAMAGES = {
    **{f"cut at {fraction}": (lambda f: lambda path: cut(path, f))(fraction) for fraction in CUTS[1:4]},
    "empty": lambda path: path.write_bytes(b""),
    "random bytes": lambda path: path.write_bytes(os.urandom(4096)),
    "no metric column": _drop("metric"),
    "no model_response column": _drop("model_response"),
}
SAID = {"empty": "is empty", "no metric column": "has no metric column",
        "no model_response column": "has no model_response column"}


@pytest.mark.parametrize("inputs", ["seed folders", "their folder"])
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_lighteval_file_is_named(damage, inputs, tmp_path, capsys):
    root, folders, details = _details(tmp_path)
    DAMAGES[damage](details)
    code, err = analyze(folders if inputs == "seed folders" else [root], capsys)
    assert code == 2 and err.startswith(f"error: {details} "), err
    assert SAID.get(damage, "is not a readable lighteval details file (damaged, cut short") in err, err
    assert "mixed formats" not in err


def test_an_unreadable_lighteval_file_is_named(tmp_path, capsys, monkeypatch):
    root, folders, details = _details(tmp_path)
    if os.geteuid() != 0:
        details.chmod(0)
    else:  # root reads every file: answer as the system answers another user, schema look included
        access, schema = os.access, pq.read_schema

        def refused(path, *args, **kwargs):
            if Path(path) == details:
                raise PermissionError(13, "Permission denied", str(path))
            return schema(path, *args, **kwargs)

        monkeypatch.setattr(os, "access", lambda path, mode, **kw: Path(path) != details and access(path, mode, **kw))
        monkeypatch.setattr(pq, "read_schema", refused)
    for inputs in (folders, [root]):
        assert_refused(inputs, f"cannot read {details}: permission denied", capsys)


def test_a_second_details_file_of_one_task_in_a_run_folder_is_refused(tmp_path, capsys):
    root, folders, _ = _details(tmp_path)
    other = next(folders[1].glob("*.parquet"))
    shutil.copy(other, folders[0] / other.name)
    for inputs in (folders, [root]):
        assert_refused(inputs, f"{folders[0]} holds two lighteval details files of task sst2_local|2", capsys)


def test_a_run_folder_holding_two_tasks_is_one_run(tmp_path):
    root, folders, details = _details(tmp_path)
    records = pq.read_table(details).to_pylist()
    for record in records:
        record["doc"]["task_name"] = "other|2"
    pq.write_table(pa.Table.from_pylist(records), folders[0] / details.name.replace("sst2_local", "other"))
    table = read_predictions(folders)
    assert table.groupby("task")["run"].unique().map(sorted).to_dict() == {
        "other|2": ["seed1"], "sst2_local|2": ["seed1", "seed2", "seed3"]}


def test_more_log_likelihoods_than_choices_are_named(tmp_path, capsys):
    _, folders, details = _details(tmp_path)
    records = pq.read_table(details).to_pylist()
    records[4]["model_response"]["logprobs"] = records[4]["model_response"]["logprobs"] + [-3.0]
    pq.write_table(pa.Table.from_pylist(records), details)
    assert_refused(folders, f"{details} row 5: model_response has 3 log-likelihoods for the 2 choices", capsys)


# --- every message names the file ---------------------------------------------------------------------------------

@pytest.mark.parametrize("value, said", [("-0.2", "prob_0 is -0.2, outside [0, 1]"), ("1.2", "prob_0 is 1.2, outside"),
                                         ("inf", "prob_0 is inf, outside"), ("", "prob_0 is missing"),
                                         ("0.5", "sum to 1.2")])
def test_a_bad_probability_names_its_file_and_line(value, said, tmp_path, capsys):
    paths = _tables(tmp_path, ".csv")
    frame = pd.read_csv(paths[0], dtype=str, keep_default_na=False)
    frame.loc[2, "prob_0"] = value
    if value == "0.5":
        frame.loc[2, "prob_1"] = "0.7"
    frame.to_csv(paths[0], index=False)
    assert_refused(paths, f"{paths[0]} line 4: ", capsys)
    assert said in analyze(paths, capsys)[1]


def test_a_class_without_a_probability_column_names_its_line(tmp_path, capsys):
    paths = _tables(tmp_path, ".csv")
    frame = pd.read_csv(paths[0], dtype=str)
    frame.loc[2, "prediction"] = "2"
    frame.to_csv(paths[0], index=False)
    assert_refused(paths, f"{paths[0]} line 4: the prediction 2 has no probability column (columns: prob_0, prob_1)",
                   capsys)


def test_two_gold_labels_of_one_example_name_both_files(tmp_path, capsys):
    paths = _tables(tmp_path, ".csv")
    frame = pd.read_csv(paths[1])
    frame.loc[2, "label"] = 1 - frame.loc[2, "label"]
    frame.to_csv(paths[1], index=False)
    assert_refused(paths, f"{paths[0]} line 4 and {paths[1]} line 4: example {frame.loc[2, 'id']} has two gold labels",
                   capsys)


@pytest.mark.parametrize("probabilities", [True, False], ids=["long tables", "plain tables (columnar path)"])
@pytest.mark.parametrize("column", ["prediction", "label"])
def test_an_infinite_class_is_named_without_a_runtime_warning(column, probabilities, tmp_path, capsys):
    paths = _tables(tmp_path, ".csv")
    for path in paths:
        frame = pd.read_csv(path, dtype=str)
        if path == paths[0]:
            frame.loc[2, column] = "inf"
        frame.drop(columns=[] if probabilities else ["prob_0", "prob_1"]).to_csv(path, index=False)
    for command in ("analyze", "compare"):
        code, err = run(capsys, command, *paths[:2], "--n-boot", "20")
        assert code == 2 and f"{paths[0]} line 4: {column} inf is not a plausible value" in err, err


def _scores(tmp_path: Path) -> list[Path]:
    """Per-example score files of three systems: the correctness of each run of the real lighteval fixture."""
    table = read_predictions(sorted(LIGHTEVAL.iterdir()))
    paths = []
    for run_name, rows in table.groupby("run"):
        path = tmp_path / f"{run_name}.csv"
        rows.assign(score=(rows["prediction"] == rows["label"]).astype(float))[["example_id", "score"]].to_csv(
            path, index=False)
        paths.append(path)
    return paths


@pytest.mark.parametrize("value, said", [("nan", "score is missing"), ("", "score is missing"),
                                         ("inf", "score inf is not a finite number"),
                                         ("high", "score 'high' is not a finite number")])
def test_subsets_names_the_file_of_a_bad_score(value, said, tmp_path, capsys):
    paths = _scores(tmp_path)
    frame = pd.read_csv(paths[1], dtype=str)
    frame.loc[5, "score"] = value
    frame.to_csv(paths[1], index=False)
    code, err = run(capsys, "subsets", *paths, "--subset-size", "5")
    assert code == 2 and f"error: {paths[1]} line 7: {said}" in err, err


# --- values that cannot be right ----------------------------------------------------------------------------------

FACTOR_ROWS = ["experiment,run,a,score", "golden,1,,0.70", "golden,2,,0.74", "golden,3,,0.80",
               "a,1,1,0.71", "a,1,2,0.73", "a,2,1,0.78", "a,2,2,0.76"]


@pytest.mark.parametrize("value", ["1.7", "-0.3", "71"])
def test_classification_scores_outside_zero_one_are_refused_with_num_classes(value, tmp_path, capsys):
    path = tmp_path / "factors.csv"
    rows = list(FACTOR_ROWS)
    rows[5] = rows[5].rsplit(",", 1)[0] + f",{value}"
    path.write_text("\n".join(rows) + "\n")
    code, err = run(capsys, "factors", "analyze", path, "--num-classes", "2", "--n-boot", "50")
    assert code == 2 and f"{path} line 6: score {float(value):g} is outside [0, 1]" in err, err
    assert run(capsys, "factors", "analyze", path, "--n-boot", "50")[0] == 0  # a score of unknown range


def test_a_helm_request_never_answered_is_no_prediction(tmp_path):
    folder = copy(HELM, tmp_path / HELM.name)
    state = json.loads((folder / "scenario_state.json").read_text())
    for number in (1, 3):
        state["request_states"][number]["result"] = None
    (folder / "scenario_state.json").write_text(json.dumps(state))
    intact = read_predictions(HELM)
    with pytest.warns(ReadingChoiceWarning, match=r"2 request\(s\) never answered \(result null; requests 2, 4\)"):
        table = read_predictions(folder)
    assert len(table) == len(intact) - 2
    kept = table.merge(intact, how="left", indicator=True)
    assert (kept["_merge"] == "both").all()
    for request in state["request_states"]:
        request["result"] = None
    (folder / "scenario_state.json").write_text(json.dumps(state))
    with pytest.raises(SeedscopeError, match="no request was answered"):
        read_predictions(folder)


def test_a_helm_request_never_answered_is_named_where_the_trials_then_differ(tmp_path, capsys):
    """Trials are runs: one left without an answered request lacks that instance, and the refusal says why."""
    folder = copy(HELM, tmp_path / HELM.name)
    state = json.loads((folder / "scenario_state.json").read_text())
    state["request_states"][20]["result"] = None
    (folder / "scenario_state.json").write_text(json.dumps(state))
    written = tmp_path / "out.json"
    code, err = analyze([folder], capsys, "--json", written)
    assert code == 2 and err.startswith("error: "), err
    assert "runs cover different example ids: run trial 2 lacks 1" in err, err
    assert f"{folder / 'scenario_state.json'} request(s) 21 never answered (result null)" in err, err
    assert not written.exists()
    assert analyze([folder], capsys, "--intersect")[0] == 0


# --- lm-eval: a perplexity task's samples are scores per run, not predictions -------------------------------------

PERPLEXITY = FIXTURES / "lm_eval_perplexity"


def _perplexity_samples(root: Path = PERPLEXITY) -> list[Path]:
    return sorted(root.glob("seed*/samples_*.jsonl"))


def test_perplexity_samples_are_analysed_as_scores_per_run(tmp_path, capsys):
    written = tmp_path / "scores.json"
    code, err = analyze(_perplexity_samples(), capsys, "--json", written)
    assert code == 0, err
    document = json.loads(written.read_text())
    assert document["input"] == "run_scores"
    assert any("a perplexity task (loglikelihood_rolling) logs one log-likelihood per document, not predictions"
               in note for note in document["notes"])
    (group,) = document["groups"]
    assert group["task"] == "passages_ppl" and group["runs"] == ["1", "2", "3"]
    for samples in _perplexity_samples():  # by hand: lm-eval's own aggregates of each run, from its results file
        records = [json.loads(line) for line in samples.read_text().splitlines()]
        total = sum(float(record["filtered_resps"][0]) for record in records)
        words = sum(record["word_perplexity"][1] for record in records)
        byte_count = sum(record["byte_perplexity"][1] for record in records)
        run = json.loads(next(samples.parent.glob("results_*.json")).read_text())["results"]["passages_ppl"]
        mine = group["per_run"][samples.parent.name.removeprefix("seed")]
        assert mine["word_perplexity"] == pytest.approx(math.exp(-total / words), rel=1e-12)
        assert mine["word_perplexity"] == pytest.approx(run["word_perplexity,none"], rel=1e-9)
        assert mine["byte_perplexity"] == pytest.approx(run["byte_perplexity,none"], rel=1e-9)
        assert mine["bits_per_byte"] == pytest.approx(-total / byte_count / math.log(2), rel=1e-12)
        assert mine["bits_per_byte"] == pytest.approx(run["bits_per_byte,none"], rel=1e-9)


def test_perplexity_samples_are_no_predictions(capsys):
    first = _perplexity_samples()[0]
    with pytest.raises(SeedscopeError, match=rf"{first} line 1: a perplexity task's sample \(loglikelihood_rolling"):
        read_predictions(_perplexity_samples())


def test_perplexity_samples_before_the_metric_keys_give_the_mean_log_likelihood(tmp_path, capsys):
    """Logs of lm-eval 0.4.3–0.4.6 have no metric keys: the mean log-likelihood per document is what they hold."""
    root = copy(PERPLEXITY, tmp_path / "logs")
    expected = {}
    for samples in _perplexity_samples(root):
        records = [json.loads(line) for line in samples.read_text().splitlines()]
        for record in records:
            for key in ("filter", "metrics", "word_perplexity", "byte_perplexity", "bits_per_byte"):
                record.pop(key)
        samples.write_text("".join(json.dumps(record) + "\n" for record in records))
        expected[samples.parent.name.removeprefix("seed")] = sum(float(r["resps"][0][0]) for r in records) / len(records)
    written = tmp_path / "scores.json"
    code, err = analyze(_perplexity_samples(root), capsys, "--json", written)
    assert code == 0, err
    per_run = json.loads(written.read_text())["groups"][0]["per_run"]
    assert {run: values["mean_log_likelihood"] for run, values in per_run.items()} == pytest.approx(expected)


@pytest.mark.parametrize(("value", "fault"), [("12.5", "is not a log-probability"), ("nan", "is not a log-probability")])
def test_a_perplexity_log_likelihood_that_cannot_be_is_refused_with_its_line(value, fault, tmp_path, capsys):
    root = copy(PERPLEXITY, tmp_path / "logs")
    samples = _perplexity_samples(root)
    lines = samples[1].read_text().splitlines()
    record = json.loads(lines[2])
    record["filtered_resps"] = [value]
    lines[2] = json.dumps(record)
    samples[1].write_text("\n".join(lines) + "\n")
    written = tmp_path / "scores.json"
    code, err = analyze(samples, capsys, "--json", written)
    assert code == 2 and err.startswith("error: ") and f"{samples[1]} line 3: log-likelihood" in err and fault in err, err
    assert not written.exists()
