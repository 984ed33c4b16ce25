"""`seedscope show-prompt`: the stored prompts of a prompted run, readable and as JSON that re-scores the run."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

from seedscope.store import ExperimentStore

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runners" / "icl"))
from test_lm_scoring import lm_eval_pair  # noqa: E402  (the field's split, written out in that test)

RUN = "sst2__tiny-chat-llama0__icl__s1"


@pytest.fixture(scope="module")
def icl_store(tmp_path_factory, tiny_chat_llama, data_dir):
    """A real prompted sweep (two seeds, the instruction format, 6 test sentences) of the tiny chat decoder."""
    from seedscope.cli import main

    out = tmp_path_factory.mktemp("icl") / "exp"
    try:
        main(["sweep", "--runner", "icl", "--task", "sst2", "--model", str(tiny_chat_llama), "--seeds", "1,2",
              "--shots", "1", "--prompt-format", "instruction", "--set", "max_eval_examples=6", "--out", str(out),
              "--data-dir", str(data_dir)])
    except SystemExit as done:
        assert not done.code
    return out


def test_the_json_requests_rescore_to_the_stored_probabilities(icl_store, tiny_chat_llama, cli):
    """What show-prompt prints is exactly what was scored: lm-eval's split of it gives the run's probabilities."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    code, printed, err = cli(["show-prompt", str(icl_store), "--run", RUN, "--jsonl"])
    assert code == 0, err
    records = [json.loads(line) for line in printed.splitlines()]
    stored = ExperimentStore.open(icl_store).predictions()
    stored = stored[stored["run"] == "1"].set_index("example_id")
    assert [r["example_id"] for r in records] == stored.index.tolist() and len(records) == 6
    assert all(r["labels"] == ["negative", "positive"] for r in records)
    assert records[0]["context"].endswith("Answer:") and records[0]["continuations"] == [" negative", " positive"]
    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_llama)
    model = AutoModelForCausalLM.from_pretrained(tiny_chat_llama).eval()
    for record in records:
        scores = []
        for continuation in record["continuations"]:
            context, answer = lm_eval_pair(tokenizer, record["context"], continuation)
            with torch.no_grad():
                logprobs = torch.log_softmax(model(torch.tensor([context + answer])).logits[0], dim=-1)
            scores.append(sum(float(logprobs[t - 1, (context + answer)[t]]) for t in range(len(context), len(context + answer))))
        probabilities = np.exp(scores) / np.exp(scores).sum()
        np.testing.assert_allclose(probabilities, stored.loc[record["example_id"], ["prob_negative", "prob_positive"]]
                                   .to_numpy(dtype=float), atol=1e-4)


def test_the_readable_listing_shows_the_prefix_once_then_each_example(icl_store, cli):
    code, printed, err = cli(["show-prompt", str(icl_store), "--run", RUN, "--limit", "2"])
    assert code == 0, err
    assert printed.count("shared prefix") == 1 and "Options:" in printed and "p = " in printed
    assert printed.count("after the prefix") == 2 and "4 more examples" in printed
    code, one, _ = cli(["show-prompt", str(icl_store), "--run", RUN, "--example", "3"])
    assert code == 0 and "whole context" in one and "shared prefix" not in one and "example 3 (label" in one
    code, line, _ = cli(["show-prompt", str(icl_store), "--run", RUN, "--example", "3", "--jsonl"])
    assert code == 0 and json.loads(line)["example_id"] == "3"


def test_the_prompt_columns_stay_out_of_the_analysed_predictions(icl_store):
    assert not {"query", "continuations"} & set(ExperimentStore.open(icl_store).predictions().columns)
    assert ExperimentStore.open(icl_store).verify() == []


@pytest.mark.parametrize(("args", "message"), [
    (["--run", "nope"], "has no run 'nope' (its runs: sst2__tiny-chat-llama0__icl__s1"),
    (["--run", RUN, "--example", "999"], "has no test example '999' (its 6 examples: 0, 1, 2"),
])
def test_bad_requests_are_one_message(icl_store, cli, args, message):
    code, _, err = cli(["show-prompt", str(icl_store), *args])
    assert code == 2 and message in err and "Traceback" not in err


def test_a_fine_tuning_run_has_no_prompt(tmp_path, synthetic_store, synthetic_predictions, cli):
    store = synthetic_store(tmp_path / "ft", synthetic_predictions(n_seeds=2, n_examples=5))
    run_id = store.runs()["run_id"].iloc[0]
    code, _, err = cli(["show-prompt", str(store.path), "--run", run_id])
    assert code == 2 and f"run {run_id} is a full run: only prompted runs (--runner icl) keep their prompts" in err


def test_analyze_and_the_report_show_each_unstable_examples_prompt(icl_store, cli, tmp_path):
    from seedscope.workflows.reporting import build_report

    code, printed, err = cli(["analyze", str(icl_store), "--top", "3", "--details"])
    assert code == 0, err
    assert "the examples show their own part of the prompt as run" in printed and "show-prompt" in printed
    assert "Input:" in printed  # the instruction format's own part of an example's prompt
    report = build_report(icl_store, html=tmp_path / "r.html")
    unstable = next(iter(report.unstable.values()))
    assert unstable["text"].str.startswith("Input:").all()
