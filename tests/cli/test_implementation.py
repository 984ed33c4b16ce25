"""`--implementation` from the command line: a sweep over implementation settings, its analysis, and bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from seedscope.store import ExperimentStore


def args(model, out, data_dir, *extra) -> list[str]:
    return ["sweep", "--runner", "icl", "--task", "sst2", "--model", str(model), "--seeds", "1,2", "--shots", "1",
            "--set", "max_eval_examples=6", "--out", str(out), "--data-dir", str(data_dir), *extra]


def test_a_sweep_runs_every_combination_for_every_seed_and_analyze_compares_them(tmp_path, tiny_llama, data_dir, cli):
    out = tmp_path / "exp"
    code, _, err = cli(args(tiny_llama, out, data_dir, "--implementation", "precision=fp32,bf16",
                            "--implementation", "batch_size=1,4", "--implementation", "rerun=1,2"))
    assert code == 0, err
    runs = ExperimentStore.open(out).runs()
    assert len(runs) == 16 and set(runs["status"]) == {"done"}
    assert runs["run_id"].str.endswith("__impl-bf16-b4-r2").sum() == 2
    environment = ExperimentStore.open(out).environment()
    applied = environment.set_index("run_id").filter(like="implementation.").loc[
        runs["run_id"][runs["run_id"].str.endswith("impl-bf16-b4-r1")].iloc[0]]
    assert applied["implementation.precision"] == "bf16" and applied["implementation.batch_size"] == 4
    assert applied["implementation.attention"] == "sdpa" and applied["implementation.rerun"] == 1
    code, printed, err = cli(["analyze", str(out), "--json", str(tmp_path / "a.json"), "--n-boot", "200"])
    assert code == 0, err
    pairs = json.loads((tmp_path / "a.json").read_text())["implementation"]
    by_pair = {(p["a"], p["b"]): p for p in pairs}
    rerun = by_pair[("impl-fp32-b1-r1", "impl-fp32-b1-r2")]
    assert rerun["setting"] == "rerun" and rerun["flip_rate"] == 0 and rerun["max_abs_logprob_diff"] == 0
    batch = by_pair[("impl-fp32-b1-r1", "impl-fp32-b4-r1")]
    assert batch["setting"] == "batch_size" and batch["max_abs_logprob_diff"] < 1e-4
    assert not any(p["probable_bug"] for p in pairs)
    assert ("impl-fp32-b1-r1", "impl-bf16-b4-r2") not in by_pair  # other settings on another rerun: not compared
    assert "Implementation settings ranked beside the seed" in printed


@pytest.mark.parametrize(("option", "message"), [
    ("precison=fp32", "unknown implementation setting 'precison'; known: engine, precision"),
    ("precision=fp8", "implementation setting precision takes fp32, bf16, fp16, not 'fp8'"),
    ("precision=fp16", "precision fp16 needs a GPU"),
    ("attention=flash", "attention flash needs the flash_attn package"),
    ("device=cuda", "device cuda asked for, but no GPU is visible"),
    ("batch_size=0", "batch_size takes a whole number of at least 1"),
    ("tf32=true", "tf32 on needs a GPU"),
])
def test_bad_implementation_input_is_one_line_and_writes_nothing(tmp_path, tiny_llama, data_dir, cli, option, message):
    out = tmp_path / "exp"
    code, _, err = cli(args(tiny_llama, out, data_dir, "--implementation", option))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1 and not out.exists()


def test_a_setting_a_runner_cannot_honour_is_refused(tmp_path, tiny_llama, tiny_bert, data_dir, cli):
    out = tmp_path / "exp"
    code, _, err = cli(args(tiny_llama, out, data_dir, "--predict", "generate", "--implementation", "padding_side=right"))
    assert code == 2 and "padding_side right cannot be honoured by generation" in err and not out.exists()
    code, _, err = cli(["sweep", "--task", "rte", "--model", str(tiny_bert), "--seeds", "1", "--out", str(out),
                        "--data-dir", str(data_dir), "--implementation", "attention=eager,sdpa"])
    assert code == 2 and "the finetune runner (method full) cannot honour the implementation setting attention" in err
    assert not out.exists()


def test_factors_plan_only_counts_the_implementation_factor(tiny_llama, data_dir, cli):
    code, printed, err = cli(["factors", "run", "--runner", "icl", "--task", "sst2", "--model", str(tiny_llama),
                              "--factor", "sample_choice", "--factor", "implementation", "--implementation",
                              "batch_size=1,4,8", "-N", "2", "-M", "2", "-L", "2", "--shots", "1", "--num-labelled", "20",
                              "--set", "max_train_examples=100", "--set", "max_eval_examples=4", "--data-dir", str(data_dir),
                              "--plan-only"])
    assert code == 0, err
    assert "implementation" in printed and "12 runs" in printed  # 2 golden + 2 × (2 + 3)


def _two_implementations(tmp_path):
    """One real lm-eval samples file as written at 'batch 1', and a copy whose first three documents' answers are
    swapped, as a defective 'batch 128' would write them: (the two run folders, the lines, the documents flipped)."""
    from pathlib import Path

    source = next((Path(__file__).parents[1] / "io/fixtures/lm_eval_0.4.13/seed1").glob("samples_*.jsonl"))
    lines = source.read_text().splitlines()
    swapped = []
    for number, line in enumerate(lines):
        record = json.loads(line)
        if number < 3:
            record["filtered_resps"] = record["filtered_resps"][::-1]
            record["resps"] = record["resps"][::-1]
        swapped.append(json.dumps(record))
    for run, text in (("b1", lines), ("b128", swapped)):  # the layout lm-eval writes: one folder per run
        (tmp_path / "out" / run).mkdir(parents=True)
        (tmp_path / "out" / run / source.name).write_text("\n".join(text) + "\n")
    flipped = sum(json.loads(line)["filtered_resps"][0][0] != json.loads(line)["filtered_resps"][1][0]
                  for line in lines[:3])
    return [str(tmp_path / "out" / "b1"), str(tmp_path / "out" / "b128")], lines, flipped


def test_lm_eval_files_of_two_implementations(tmp_path, cli):
    (b1, b128), lines, flipped = _two_implementations(tmp_path)
    code, printed, err = cli(["analyze", b1, b128,
                              "--implementations", "--json", str(tmp_path / "a.json"), "--n-boot", "200"])
    assert code == 0, err
    pair = json.loads((tmp_path / "a.json").read_text())["implementation"][0]
    assert {pair["a"], pair["b"]} == {"impl-b1", "impl-b128"} and pair["setting"] == "batch_size"
    assert pair["flip_rate"] == pytest.approx(flipped / len(lines)) and pair["n_examples"] == len(lines)
    assert "Implementations: pairs" in printed


def test_compare_takes_two_sweeps_as_implementations(tmp_path, cli):
    """The same two folders through compare: the seed-level comparison, and the implementation pair beside it."""
    (b1, b128), lines, flipped = _two_implementations(tmp_path)
    code, printed, err = cli(["compare", b1, b128, "--names", "b1", "--names", "b128", "--implementations",
                              "--json", str(tmp_path / "c.json"), "--n-boot", "200", "--n-permutations", "99"])
    assert code == 0, err
    document = json.loads((tmp_path / "c.json").read_text())
    (pair,) = document["implementation"]
    assert {pair["a"], pair["b"]} == {"impl-b1", "impl-b128"}
    assert pair["flip_rate"] == pytest.approx(flipped / len(lines)) and pair["n_examples"] == len(lines)
    assert "Implementations: pairs" in printed and "needs two runs (seeds) per sweep" in printed + err


def test_one_seed_is_an_implementation_study(tmp_path, tiny_llama, data_dir, cli):
    """One seed under four implementations: the sweep's summary and analyze (with and without
    --runs-are-implementations) show the pairs, measured as by hand from the store, the seed floor as — with a note."""
    out = tmp_path / "exp"
    sweep = ["--seeds", "1", "--implementation", "precision=fp32,bf16", "--implementation", "batch_size=1,4"]
    code, printed, err = cli(args(tiny_llama, out, data_dir, *sweep))
    assert code == 0, err
    assert "Implementations: pairs" in printed and "Implementation settings ranked beside the seed" in printed
    assert "note: one seed per implementation" in printed and "no seed effects to show" in printed
    table = ExperimentStore.open(out).predictions()
    by_impl = {model.rsplit("-impl-", 1)[1]: rows.set_index("example_id") for model, rows in table.groupby("model")}
    for extra in ([], ["--implementations"]):
        json_file, markdown = tmp_path / "a.json", tmp_path / "a.md"
        code, printed, err = cli(["analyze", str(out), "--json", str(json_file), "--markdown", str(markdown),
                                  "--n-boot", "200", *extra])
        assert code == 0, err
        assert "note: every group (4) holds a single finished run, so there are no seed effects to show" in printed
        document = json.loads(json_file.read_text())
        assert document["groups"] == [] and len(document["implementation"]) == 6
        assert any(note.startswith("one seed per implementation") for note in document["implementation_notes"])
        for pair in document["implementation"]:
            a = by_impl[pair["a"].removeprefix("impl-")]
            b = by_impl[pair["b"].removeprefix("impl-")].loc[a.index]
            correct_a, correct_b = a["prediction"] == a["label"], b["prediction"] == b["label"]
            assert pair["n_seeds"] == 1 and pair["n_examples"] == len(a) == 6
            assert pair["flip_rate"] == pytest.approx((a["prediction"] != b["prediction"]).mean())
            assert pair["metric_diff"] == pytest.approx(correct_a.mean() - correct_b.mean())
            assert pair["metric_diff_low"] <= pair["metric_diff"] <= pair["metric_diff_high"]
            assert pair["seed_flip_rate"] is None and pair["seed_std"] is None and pair["null_flip_rate"] is None
            assert pair["probable_bug"] is False or pair["metric_diff_low"] > 0 or pair["metric_diff_high"] < 0
        by_pair = {(p["a"], p["b"]): p for p in document["implementation"]}
        assert by_pair[("impl-fp32-b1", "impl-bf16-b1")]["setting"] == "precision"
        assert by_pair[("impl-fp32-b1", "impl-bf16-b1")]["max_abs_logprob_diff"] > 0  # bf16 moves every log p
        text = markdown.read_text()
        assert "### Implementations: pairs (same seeds, same examples)" in text
        row = next(line for line in text.splitlines() if "'impl-fp32-b1', 'impl-bf16-b1')" in line)
        assert row.split(" | ")[-4:-1] == ["—", "—", "—"]  # null flip rate, seed flip rate, seed std: not measured


def test_first_diverging_word_of_one_seed_generations(tmp_path, tiny_llama, data_dir, cli):
    """Generated answers under two precisions: the share that differ and the first diverging word, in the table."""
    out = tmp_path / "exp"
    code, printed, err = cli(args(tiny_llama, out, data_dir, "--seeds", "1", "--predict", "generate",
                                  "--max-new-tokens", "6", "--implementation", "precision=fp32,bf16"))
    assert code == 0, err
    assert "Implementations: pairs" in printed
    code, printed, err = cli(["analyze", str(out), "--json", str(tmp_path / "a.json"), "--markdown",
                              str(tmp_path / "a.md"), "--n-boot", "200"])
    assert code == 0, err
    assert "| answers differ | first diverging word (median) |" in (tmp_path / "a.md").read_text()
    (pair,) = json.loads((tmp_path / "a.json").read_text())["implementation"]
    answers = {model.rsplit("-impl-", 1)[1]: rows.set_index("example_id")["answer"]
               for model, rows in ExperimentStore.open(out).predictions().groupby("model")}
    words = [(str(a).split(), str(b).split()) for a, b in zip(answers["fp32"], answers["bf16"].loc[answers["fp32"].index])]
    firsts = [next(i for i, (x, y) in enumerate(zip(a + [None], b + [None])) if x != y) for a, b in words if a != b]
    assert pair["answers_differ"] == pytest.approx(len(firsts) / len(words))
    assert pair["median_first_diverging_word"] == (float(np.median(firsts)) if firsts else None)


def test_a_store_with_nothing_to_analyse_is_one_error(tmp_path, tiny_llama, data_dir, cli):
    out = tmp_path / "exp"
    code, printed, err = cli(args(tiny_llama, out, data_dir, "--seeds", "1"))
    assert code == 0 and "every task has fewer than two finished runs" in printed, err
    for extra in ([], ["--implementations"]):
        code, _, err = cli(["analyze", str(out), *extra])
        assert code == 2 and len(err.strip().splitlines()) == 1
        assert "holds a single finished run" in err and "a seed effect compares two runs or more" in err
