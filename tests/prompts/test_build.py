"""Prompts built exactly: each format's strings, verbalisers, multiple choice, and the bad inputs."""

from __future__ import annotations

import pandas as pd
import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan.hparams import ICLSettings
from seedscope.prompts import FORMATS, build_prompts, get_format, get_task_prompt
from seedscope.tasks import get_task, load_examples

SST2 = get_task_prompt("sst2")
DEMOS = pd.DataFrame({"example_id": ["a", "b"], "text": ["good film", "bad film"], "text_pair": [None, None],
                      "label": [1, 0]})
TESTS = pd.DataFrame({"example_id": ["t"], "text": ["fine movie"], "text_pair": [None], "label": [1]})


def test_minimal_format():
    prompts = build_prompts(get_format("minimal"), SST2, DEMOS, TESTS)
    assert prompts.prefix == "good film\nLabel: positive\n\nbad film\nLabel: negative\n\n"
    assert prompts.queries == ["fine movie\nLabel:"]
    assert prompts.candidates == [[" negative", " positive"]]
    assert prompts.full(0, 1) == prompts.prefix + "fine movie\nLabel: positive"


def test_instruction_format_lists_numbered_options():
    prompts = build_prompts(get_format("instruction"), SST2, DEMOS, TESTS)
    assert prompts.prefix == (
        "Is the sentiment of the sentence negative or positive?\nOptions:\n1. negative\n2. positive\n\n"
        "Input: good film\nAnswer: positive\n\nInput: bad film\nAnswer: negative\n\n"
    )
    assert prompts.queries == ["Input: fine movie\nAnswer:"]


def test_chat_format_uses_the_models_template(tiny_chat_llama):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_llama)
    prompts = build_prompts(get_format("chat"), SST2, DEMOS, TESTS, tokenizer)
    assert prompts.prefix == (
        "<system>Is the sentiment of the sentence negative or positive? Answer with one of: negative, positive.\n"
        "<user>good film\n<assistant>positive\n<user>bad film\n<assistant>negative\n"
    )
    assert prompts.queries == ["<user>fine movie\n<assistant>"] and prompts.candidates == [["negative", "positive"]]


def test_a_chat_format_needs_a_chat_template(tiny_llama):
    from transformers import AutoTokenizer

    with pytest.raises(SeedscopeError, match="needs a model with a chat template"):
        build_prompts(get_format("chat"), SST2, DEMOS, TESTS, AutoTokenizer.from_pretrained(tiny_llama))


def test_pair_tasks_name_their_fields():
    rte = get_task_prompt("rte")
    demos = pd.DataFrame({"text": ["It rained."], "text_pair": ["The ground is wet."], "label": [0]})
    tests = pd.DataFrame({"text": ["A cat sat."], "text_pair": ["A dog sat."], "label": [1]})
    prompts = build_prompts(get_format("minimal"), rte, demos, tests)
    assert prompts.prefix == "Premise: It rained.\nHypothesis: The ground is wet.\nLabel: yes\n\n"
    assert prompts.queries == ["Premise: A cat sat.\nHypothesis: A dog sat.\nLabel:"]
    assert prompts.candidates == [[" yes", " no"]]  # entailment, not_entailment


def test_multiple_choice_answers_are_the_choices(data_dir):
    copa = load_examples("copa", "validation", data_dir).head(3)
    prompts = build_prompts(get_format("minimal"), get_task_prompt("copa"), copa.head(1), copa.tail(2))
    first = copa.iloc[0]
    assert prompts.prefix == (f"{first.text}\n1. {first.choices[0]}\n2. {first.choices[1]}\nLabel: "
                              f"{first.choices[int(first.label)]}\n\n")
    assert prompts.candidates == [[" " + c for c in row.choices] for row in copa.tail(2).itertuples()]


@pytest.mark.parametrize("task", ["sst2", "cola", "mrpc", "qqp", "qnli", "rte", "superglue-rte", "cb", "boolq",
                                  "multirc", "wic", "wsc", "copa"])
def test_every_classification_task_has_a_verbaliser(task):
    """One distinct label word per label; only a multiple-choice task (COPA) answers with its own choices."""
    prompt = get_task_prompt(task)
    if task == "copa":
        assert prompt.words is None and prompt.answers(["left", "right"]) == ["left", "right"]
        return
    assert prompt.words is not None, f"{task} has no label words"
    assert len(prompt.words) == len(get_task(task).label_names)
    assert len(set(prompt.words)) == len(prompt.words)


def test_bad_inputs():
    with pytest.raises(SeedscopeError, match="task stsb has no verbaliser .* regression task"):
        get_task_prompt("stsb")
    with pytest.raises(SeedscopeError, match="unknown prompt format 'fancy'; use one of minimal, instruction, chat"):
        get_format("fancy")
    with pytest.raises(SeedscopeError, match="hyper-parameter prompt_format: Value error, unknown prompt format 'fancy'"):
        ICLSettings.from_hparams({"prompt_format": ["minimal", "fancy"]})
    assert set(FORMATS) == {"minimal", "instruction", "chat"}
