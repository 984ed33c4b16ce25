"""lm-evaluation-harness --log_samples files: three format generations, filters, naming, errors."""

from __future__ import annotations

import json
import re

import numpy as np
from pathlib import Path

import pytest

from seedscope.errors import SeedscopeError
from seedscope.io import read_predictions
from seedscope.predictions import align_runs

LLS = [[-2.8125, -0.3515625], [-0.6875, -1.90625], [-0.953125, -1.015625]]
GOLD = [1, 0, 1]


def _softmax(row):
    e = np.exp(np.array(row) - max(row))
    return e / e.sum()


def _sst2(lm, path, version="0.4.7", order=(0, 1, 2), **kwargs):
    records = [lm.mc(i, LLS[i], GOLD[i], version=version, **kwargs) for i in order]
    return (lm.array if version < "0.4.3" else lm.jsonl)(path, records)


def test_the_reference_example_reads_as_documented(shared_dir, tmp_path):
    block = re.search(r"```jsonl\n(.*?)```", (shared_dir / "reference" / "formats.md").read_text(), re.S).group(1)
    path = tmp_path / "samples_sst2_2025-01-31T12-34-56.789012.jsonl"
    path.write_text(block)
    table = read_predictions([path])
    assert table["example_id"].tolist() == ["0", "1", "2"]
    assert table["prediction"].tolist() == [1, 0, 0]  # argmax of float(filtered_resps[i][0])
    assert table["label"].tolist() == [1, 0, 1]
    assert table["task"].unique().tolist() == ["sst2"]
    np.testing.assert_allclose(table[["prob_0", "prob_1"]].to_numpy(), [_softmax(r) for r in LLS])


def test_builder_matches_the_reference_schema(shared_dir, lm):
    """The fixture writer produces lines with the reference's keys, in the reference's order."""
    block = re.search(r"```jsonl\n(.*?)```", (shared_dir / "reference" / "formats.md").read_text(), re.S).group(1)
    reference = json.loads(block.splitlines()[0])
    built = lm.mc(0, LLS[0], 1)
    assert list(built) == list(reference)
    assert built["resps"] == reference["resps"] and built["filtered_resps"] == reference["filtered_resps"]
    assert built["target_hash"] == reference["target_hash"]


@pytest.mark.parametrize("version", ["0.4.2", "0.4.3", "0.4.5", "0.4.7"])
def test_all_three_generations_give_the_same_table(lm, tmp_path, version):
    name = "pretrained=EleutherAI__pythia-14m_sst2.jsonl" if version < "0.4.3" else f"samples_sst2_{lm.stamp}.jsonl"
    path = _sst2(lm, tmp_path / name, version=version)
    table = read_predictions([path], task_type=None)
    assert table["prediction"].tolist() == [1, 0, 0]
    assert table["label"].astype(int).tolist() == GOLD
    np.testing.assert_allclose(table[["prob_0", "prob_1"]].to_numpy(), [_softmax(r) for r in LLS])


def test_pre_043_array_is_detected_and_named_from_its_results(lm, tmp_path):
    path = _sst2(lm, tmp_path / "pretrained=EleutherAI__pythia-14m_sst2.jsonl", version="0.4.2")
    assert path.read_text().startswith("[\n")
    lm.results(tmp_path, {"random_seed": 7, "numpy_seed": 7, "torch_seed": 7, "fewshot_seed": 7}, stamp="x")
    (tmp_path / "results_x.json").rename(tmp_path / "results.json")
    table = read_predictions([path])
    assert table["task"].unique().tolist() == ["sst2"] and table["run"].unique().tolist() == ["7"]


def test_unsorted_doc_ids_are_sorted(lm, tmp_path):
    path = _sst2(lm, tmp_path / f"samples_sst2_{lm.stamp}.jsonl", order=(2, 0, 1))
    table = read_predictions([path])
    assert table["example_id"].tolist() == ["0", "1", "2"] and table["prediction"].tolist() == [1, 0, 0]


def test_pair_valued_f1_and_mcc(lm, tmp_path):
    mrpc = [lm.mc(i, LLS[i], GOLD[i], metrics=("acc", "f1"), choices=(" no", " yes")) for i in range(3)]
    cola = [lm.mc(i, LLS[i], GOLD[i], metrics=("mcc",), choices=(" no", " yes")) for i in range(3)]
    assert mrpc[0]["f1"] == [1, 1] and cola[1]["mcc"] == [0, 0]
    for task, records in (("mrpc", mrpc), ("cola", cola)):
        table = read_predictions([lm.jsonl(tmp_path / f"samples_{task}_{lm.stamp}.jsonl", records)])
        assert table["label"].tolist() == GOLD and table["prediction"].tolist() == [1, 0, 0]


def test_gold_from_the_pair_wins_over_a_text_target(lm, tmp_path):
    """A CoLA-style line whose target is choice text: the [gold, predicted] pair names the index."""
    record = lm.mc(0, [-0.2, -3.0], 1, metrics=("mcc",), target="acceptable")
    path = lm.jsonl(tmp_path / f"samples_cola_{lm.stamp}.jsonl", [record])
    assert read_predictions([path])["label"].tolist() == [1]


def test_text_target_is_matched_to_the_choices(lm, tmp_path):
    records = [lm.mc(i, LLS[i], GOLD[i], target=[" negative", " positive"][GOLD[i]].strip()) for i in range(3)]
    table = read_predictions([lm.jsonl(tmp_path / f"samples_sst2_{lm.stamp}.jsonl", records)])
    assert table["label"].tolist() == GOLD


def test_three_choices_and_ragged_choice_counts(lm, tmp_path):
    records = [lm.mc(0, [-1.0, -2.0, -0.5], 2, choices=(" a", " b", " c")), lm.mc(1, [-1.0, -0.1], 1, choices=(" a", " b"))]
    table = read_predictions([lm.jsonl(tmp_path / f"samples_mc_{lm.stamp}.jsonl", records)])
    assert table["prediction"].tolist() == [2, 1]
    np.testing.assert_allclose(table.loc[1, ["prob_0", "prob_1", "prob_2"]].to_numpy(dtype=float),
                               [*_softmax([-1.0, -0.1]), 0.0])


def test_generation_with_two_filters(lm, tmp_path):
    strict = [lm.generation(1, "18", 18), lm.generation(0, "[invalid]", 3)]
    flexible = [lm.generation(0, "3", 3, filter="flexible-extract"), lm.generation(1, "18", 18, filter="flexible-extract")]
    records = [strict[0], flexible[1], strict[1], flexible[0]]  # one line per (document, filter)
    path = lm.jsonl(tmp_path / f"samples_gsm8k_{lm.stamp}.jsonl", records)
    table = read_predictions([path])
    assert table["prediction"].tolist() == ["[invalid]", "18"]
    assert table["label"].tolist() == ["3", "18"]
    assert table.attrs["notes"] == [
        "lm-eval task gsm8k: filters strict-match, flexible-extract; using 'strict-match' "
        "(pick another with filter= / --filter)"
    ]
    assert read_predictions([path], filter="flexible-extract")["prediction"].tolist() == ["3", "18"]
    with pytest.raises(SeedscopeError, match=r"has no filter 'exact' \(filters: strict-match, flexible-extract\)"):
        read_predictions([path], filter="exact")


def test_filter_none_is_the_default(lm, tmp_path):
    records = [lm.mc(i, LLS[i], GOLD[i], filter=f) for f in ("maj", "none") for i in range(3)]
    records[3]["filtered_resps"] = [["-9.0", "False"], ["-0.1", "True"]]  # filter "none", doc 0
    path = lm.jsonl(tmp_path / f"samples_sst2_{lm.stamp}.jsonl", records)
    assert read_predictions([path])["prediction"].tolist() == [1, 0, 0]
    assert read_predictions([path], filter="maj")["prediction"].tolist() == [1, 0, 0]
    records[3]["filtered_resps"] = [["-0.1", "True"], ["-9.0", "False"]]
    path = lm.jsonl(path, records)
    assert read_predictions([path])["prediction"].tolist() == [0, 0, 0]
    assert read_predictions([path], filter="maj")["prediction"].tolist() == [1, 0, 0]


def test_a_filter_no_input_has_is_an_error(lm, tmp_path):
    path = _sst2(lm, tmp_path / f"samples_sst2_{lm.stamp}.jsonl")
    with pytest.raises(SeedscopeError, match=r"no input has the lm-eval filter 'strict' \(filters found: none\)"):
        read_predictions([path], filter="strict")


def test_seed_directories_are_runs(lm, tmp_path):
    for seed, flip in (("seed1", False), ("seed2", True)):
        records = [lm.mc(i, LLS[i][::-1] if flip else LLS[i], GOLD[i]) for i in range(3)]
        lm.jsonl(tmp_path / seed / "EleutherAI__pythia-14m" / f"samples_sst2_{lm.stamp}.jsonl", records)
        lm.jsonl(tmp_path / seed / "EleutherAI__pythia-14m" / f"samples_rte_{lm.stamp}.jsonl", records[:2])
    table = read_predictions([tmp_path / "seed1", tmp_path / "seed2"])
    assert table.groupby(["task", "run"]).size().to_dict() == {
        ("rte", "seed1"): 2, ("rte", "seed2"): 2, ("sst2", "seed1"): 3, ("sst2", "seed2"): 3}
    sst2 = table[table["task"] == "sst2"]
    aligned = align_runs(sst2)
    assert aligned.runs == ["seed1", "seed2"]
    assert aligned.predictions.tolist() == [[1, 0, 0], [0, 1, 1]]
    only = read_predictions([tmp_path / "seed1", tmp_path / "seed2"], task="rte")
    assert only["task"].unique().tolist() == ["rte"] and len(only) == 4
    with pytest.raises(SeedscopeError, match=r"no lm-eval samples of task 'boolq' \(tasks found: rte, sst2\)"):
        read_predictions([tmp_path / "seed1"], task="boolq")


def test_a_folder_with_two_files_of_one_task_is_refused(lm, tmp_path):
    _sst2(lm, tmp_path / "out" / "a" / f"samples_sst2_{lm.stamp}.jsonl")
    _sst2(lm, tmp_path / "out" / "b" / f"samples_sst2_{lm.stamp}.jsonl")
    with pytest.raises(SeedscopeError, match=r"holds two lm-evaluation-harness samples files of task sst2"):
        read_predictions([tmp_path / "out"])


def test_files_are_named_by_the_seed_in_their_results_file(lm, tmp_path):
    paths = []
    for seed in (3, 4):
        folder = tmp_path / f"run{seed}" / "model"
        paths.append(_sst2(lm, folder / f"samples_sst2_{lm.stamp}.jsonl"))
        lm.results(folder, dict.fromkeys(("random_seed", "numpy_seed", "torch_seed", "fewshot_seed"), seed))
    assert read_predictions(paths)["run"].unique().tolist() == ["3", "4"]


def test_runs_differing_only_in_fewshot_seed_get_the_full_seed_list(lm, tmp_path):
    paths = []
    for seed in (5, 6):
        folder = tmp_path / f"r{seed}"
        paths.append(_sst2(lm, folder / f"samples_sst2_{lm.stamp}.jsonl"))
        lm.results(folder, {"random_seed": 0, "numpy_seed": 1234, "torch_seed": 1234, "fewshot_seed": seed})
    assert read_predictions(paths)["run"].unique().tolist() == [
        "random_seed=0,numpy_seed=1234,torch_seed=1234,fewshot_seed=5",
        "random_seed=0,numpy_seed=1234,torch_seed=1234,fewshot_seed=6",
    ]


def test_without_results_files_are_named_by_their_stem(lm, tmp_path):
    paths = [_sst2(lm, tmp_path / f"samples_sst2_2025-01-0{d}T00-00-00.000000.jsonl") for d in (1, 2)]
    assert read_predictions(paths)["run"].unique().tolist() == [p.stem for p in paths]
    assert read_predictions(paths, run_names=["a", "b"])["run"].unique().tolist() == ["a", "b"]


def test_same_seed_in_two_results_files_falls_back_to_distinct_names(lm, tmp_path):
    paths = []
    for name in ("x", "y"):
        paths.append(_sst2(lm, tmp_path / name / f"samples_sst2_{lm.stamp}.jsonl"))
        lm.results(tmp_path / name, dict.fromkeys(("random_seed", "numpy_seed", "torch_seed", "fewshot_seed"), 1))
    assert read_predictions(paths)["run"].unique().tolist() == ["x", "y"]


def test_malformed_line_names_file_and_line(lm, tmp_path):
    path = _sst2(lm, tmp_path / f"samples_sst2_{lm.stamp}.jsonl")
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-5]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(SeedscopeError, match=rf"{re.escape(str(path))} line 2: not valid JSON"):
        read_predictions([path])


def test_malformed_array_names_the_line(lm, tmp_path):
    path = _sst2(lm, tmp_path / "pretrained=m_sst2.jsonl", version="0.4.2")
    text = path.read_text().replace('"doc_id": 1,', '"doc_id": 1', 1)
    path.write_text(text)
    line = text[: text.index('"doc_id": 1')].count("\n") + 2
    with pytest.raises(SeedscopeError, match=rf"line {line}: not valid JSON"):
        read_predictions([path], format="lm-eval")


def test_duplicate_doc_id_within_a_filter(lm, tmp_path):
    path = _sst2(lm, tmp_path / f"samples_sst2_{lm.stamp}.jsonl", order=(0, 1, 0))
    table = read_predictions([path])  # an exact repeat counts once, with a note
    assert table["example_id"].tolist() == ["0", "1"]
    assert any("1 repeated line(s) (lines 3)" in note for note in table.attrs["notes"])
    records = [lm.mc(0, LLS[0], GOLD[0]), lm.mc(1, LLS[1], GOLD[1]), lm.mc(0, LLS[1], GOLD[0])]
    lm.jsonl(path, records)
    with pytest.raises(SeedscopeError, match=r"example id 0 appears 2 times in run .* \(lines 1 and 3\) with different"):
        read_predictions([path])


def test_perplexity_samples_are_refused(lm, tmp_path):
    record = {"doc_id": 0, "doc": {"page": "text"}, "target": "", "arguments": {"gen_args_0": {"arg_0": "text"}},
              "resps": [["-1234.5"]], "filtered_resps": [-1234.5], "filter": "none", "metrics": ["word_perplexity"]}
    path = lm.jsonl(tmp_path / f"samples_wikitext_{lm.stamp}.jsonl", [record])
    with pytest.raises(SeedscopeError, match=r"line 1: a perplexity task.s sample \(loglikelihood_rolling"):
        read_predictions([path])


def test_unknown_target_is_an_error(lm, tmp_path):
    path = lm.jsonl(tmp_path / f"samples_sst2_{lm.stamp}.jsonl", [lm.mc(0, LLS[0], 1, target="maybe")])
    with pytest.raises(SeedscopeError, match=r"line 1: cannot tell which of the 2 choices the target 'maybe' is"):
        read_predictions([path])


def test_a_line_without_doc_id_is_not_a_sample(lm, tmp_path):
    path = _sst2(lm, tmp_path / f"samples_sst2_{lm.stamp}.jsonl")
    with path.open("a") as handle:
        handle.write('{"prediction": 1}\n')
    with pytest.raises(SeedscopeError, match=r"line 4: not an lm-eval sample \(no doc_id\)"):
        read_predictions([path])


TEMPLATE_STEM = "pretrained__bigscience__bloom-560m,parallelize__True_boolq.yaml:template-{}"


def _templates(lm, folder, numbers=(1, 3, 10)):
    """Old-harness logs: one pretty-printed JSON array per prompt template, named after model and template."""
    folder.mkdir(exist_ok=True)
    paths = []
    for shift, number in enumerate(numbers):
        records = [lm.mc(i, [LLS[i][0] + 1.5 * shift, LLS[i][1]], GOLD[i], version="0.4.0") for i in range(3)]
        paths.append(lm.array(folder / f"{TEMPLATE_STEM.format(number)}.jsonl", records))
    return paths


def test_runs_by_file_reads_prompt_templates_as_runs_of_one_task(lm, tmp_path):
    paths = _templates(lm, tmp_path / "logs")
    assert paths[0].read_text().startswith("[\n") and len(paths[0].name) > 60
    by_task = read_predictions(paths)  # the default: each file a task of its own
    assert by_task["task"].nunique() == 3
    table = read_predictions(paths, runs_by="file", task="boolq")
    assert table["run"].unique().tolist() == ["template-1", "template-3", "template-10"]
    assert table["task"].unique().tolist() == ["boolq"]
    aligned = align_runs(table)
    assert aligned.n_runs == 3 and aligned.n_examples == 3
    assert aligned.predictions[0].tolist() == [1, 0, 0] and aligned.predictions[2].tolist() == [0, 0, 0]
    folder = read_predictions([tmp_path / "logs"], runs_by="file")  # a folder given: each of its files a run
    assert folder["run"].unique().tolist() == ["template-1", "template-10", "template-3"]
    assert "task" not in folder.columns and any("--task" in note for note in folder.attrs["notes"])


def test_runs_by_file_takes_only_file(lm, tmp_path):
    with pytest.raises(SeedscopeError, match="--runs-by takes 'file'"):
        read_predictions(_templates(lm, tmp_path / "logs"), runs_by="folder")


# ---- logs written by lm-eval 0.4.13 itself (tests/io/fixtures/lm_eval_0.4.13: --seed 1, 2, 3) ----------------

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "lm_eval_0.4.13"


def test_real_0_4_13_seed_folders_are_runs_and_accuracy_is_lm_evals():
    import json

    table = read_predictions([REAL / "seed1", REAL / "seed2", REAL / "seed3"])
    assert table["run"].unique().tolist() == ["seed1", "seed2", "seed3"] and len(table) == 72
    for seed in (1, 2, 3):
        results = json.loads(next((REAL / f"seed{seed}").glob("results_*.json")).read_text())
        rows = table[table["run"] == f"seed{seed}"]
        assert (rows["prediction"].astype(str) == rows["label"].astype(str)).mean() == pytest.approx(
            results["results"]["sst2_local"]["acc,none"])
    assert {"prob_0", "prob_1"} <= set(table.columns)


def test_real_0_4_13_samples_files_are_named_by_their_seed():
    files = sorted(REAL.glob("seed*/samples_*.jsonl"))
    table = read_predictions(files)
    assert table["run"].unique().tolist() == ["1", "2", "3"] and set(table["task"]) == {"sst2_local"}


def test_real_0_4_13_logs_from_the_command_line(cli):
    code, printed, err = cli(["analyze", str(REAL / "seed1"), str(REAL / "seed2"), str(REAL / "seed3"), "--details"])
    assert code == 0, err
    assert "CON" in printed and "seed3" in printed


def test_a_folder_of_seed_folders_is_one_system_of_runs_for_compare(tmp_path, cli):
    import shutil

    for system in ("a", "b"):
        shutil.copytree(REAL, tmp_path / system, ignore=shutil.ignore_patterns("*.sh", "*.md"))
    out = tmp_path / "c.json"
    code, printed, err = cli(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--n-boot", "200", "--json", str(out)])
    assert code == 0, err
    pair = json.loads(out.read_text())["pairs"][0]
    assert pair["n_matched"] == 3 and pair["paired"] and pair["delta"] == 0  # three matched seeds, identical systems
