"""Scores on the ids the field reads: lm-evaluation-harness's split, reimplemented here, on every format.

The reference is a plain full forward pass over ``context ids + continuation ids`` where, as in
lm-eval's ``_encode_pair``, the context's trailing whitespace moves to the continuation and the
whole string is tokenized once and split at the context's length. seedscope's cached, batched
scores must equal it to 1e-4 — on a tiny random decoder (seconds) and on the real SmolLM2 (slow).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from seedscope.plan import FactorSeeds
from seedscope.plan.hparams import ICLSettings
from seedscope.prompts import Prompts, build_prompts, get_format, get_task_prompt
from seedscope.runners.data import run_examples
from seedscope.runners.icl import runner as icl
from seedscope.runners.icl.lm_scoring import generate, score_causal
from seedscope.runners.icl.lm_tokens import encode_requests
from seedscope.runners.icl.sampling import Sampler
from seedscope.tasks import get_task

SEEDS = FactorSeeds.tied(7)


def lm_eval_pair(tokenizer, context: str, continuation: str) -> tuple[list[int], list[int]]:
    """lm-eval 0.4.13's ``_encode_pair`` for a causal model (``tok_encode`` with the tokenizer's special tokens)."""
    n_spaces = len(context) - len(context.rstrip())
    if n_spaces > 0:
        continuation = context[-n_spaces:] + continuation
        context = context[:-n_spaces]
    whole = tokenizer.encode(context + continuation)
    context_enc = tokenizer.encode(context)
    return context_enc, whole[len(context_enc):]


@torch.no_grad()
def reference_scores(model, tokenizer, prompts: Prompts) -> np.ndarray:
    """One full forward pass per request over lm-eval's ids; the continuation's log-likelihood."""
    scores = np.full((len(prompts.queries), max(map(len, prompts.candidates))), -np.inf)
    for i, candidates in enumerate(prompts.candidates):
        for j, candidate in enumerate(candidates):
            context, continuation = lm_eval_pair(tokenizer, prompts.prefix + prompts.queries[i], candidate)
            ids = context + continuation
            logprobs = torch.log_softmax(model(torch.tensor([ids])).logits[0].float(), dim=-1)
            scores[i, j] = sum(float(logprobs[t - 1, ids[t]]) for t in range(len(context), len(ids)))
    return scores


def run_prompts(task: str, fmt: str, tokenizer, data_dir, shots: int = 1, tests: int = 6) -> Prompts:
    settings = ICLSettings(shots=shots, max_train_examples=200, max_eval_examples=tests)
    spec = get_task(task)
    pool, rows = run_examples(spec, settings, SEEDS, data_dir)
    demos = icl.choose_demonstrations(pool, shots, SEEDS, spec)
    return build_prompts(get_format(fmt), get_task_prompt(spec), demos, rows, tokenizer)


def naive_split_differs(tokenizer, prompts: Prompts) -> bool:
    """Whether tokenizing prefix, query and answer apart (seedscope's old way) gives other ids than the field."""
    for i, query in enumerate(prompts.queries):
        apart = (tokenizer.encode(prompts.prefix) + tokenizer.encode(query, add_special_tokens=False)
                 + tokenizer.encode(prompts.candidates[i][0], add_special_tokens=False))
        context, continuation = lm_eval_pair(tokenizer, prompts.prefix + query, prompts.candidates[i][0])
        if apart != context + continuation:
            return True
    return False


@pytest.fixture(scope="module")
def tiny_lm(tiny_chat_llama):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_chat_llama)
    tokenizer.pad_token = tokenizer.eos_token
    return AutoModelForCausalLM.from_pretrained(tiny_chat_llama).eval(), tokenizer


@pytest.mark.parametrize("fmt", ["minimal", "instruction", "chat"])
@pytest.mark.parametrize("task", ["sst2", "rte", "copa"])
def test_cached_scores_equal_the_fields_whole_string_scores(tiny_lm, data_dir, task, fmt):
    model, tokenizer = tiny_lm
    prompts = run_prompts(task, fmt, tokenizer, data_dir)
    expected = reference_scores(model, tokenizer, prompts)
    np.testing.assert_allclose(score_causal(model, tokenizer, prompts, batch_size=4), expected, atol=1e-4)
    np.testing.assert_allclose(score_causal(model, tokenizer, prompts, batch_size=3, prefix_cache=False), expected,
                               atol=1e-4)
    for cache in (True, False):  # right padding (an implementation setting): each row's last real position is read
        np.testing.assert_allclose(score_causal(model, tokenizer, prompts, batch_size=4, prefix_cache=cache,
                                                padding_side="right"), expected, atol=1e-4)
    assert encode_requests(tokenizer, prompts).uncached == 0  # the prefix boundary holds for every example


def test_an_example_that_does_not_start_with_the_prefixs_ids_reads_its_whole_context(tiny_lm):
    """"fil" + "m …" merges across the prefix boundary: that example falls back, the other keeps the cache.

    (Tokenizing prefix and query apart, as seedscope once did, reads other ids here: this test fails on it.)
    """
    model, tokenizer = tiny_lm
    prompts = Prompts("The film was great. Label: positive\nThe fil", ["m was dull.\nLabel:", "\nA dull film.\nLabel:"],
                      [[" negative", " positive"], [" negative", " positive"]])
    tokens = encode_requests(tokenizer, prompts)
    assert tokens.cached == [False, True] and tokens.uncached == 1
    assert tokens.context(0) == lm_eval_pair(tokenizer, prompts.prefix + prompts.queries[0], " negative")[0]
    np.testing.assert_allclose(score_causal(model, tokenizer, prompts), reference_scores(model, tokenizer, prompts),
                               atol=1e-4)


def test_a_context_ending_in_whitespace_gives_it_to_the_continuation():
    prompts = Prompts("", ["Review: fine.\nAnswer: "], [["yes", "no"]])
    assert prompts.request(0, 0) == ("Review: fine.\nAnswer:", " yes")


def test_generation_reads_the_whole_strings_ids(tiny_lm, data_dir):
    model, tokenizer = tiny_lm
    prompts = run_prompts("sst2", "minimal", tokenizer, data_dir, tests=3)
    texts = generate(model, tokenizer, prompts, "causal", batch_size=2, max_new_tokens=2)
    for query, text in zip(prompts.queries, texts):
        ids = tokenizer(prompts.prefix + query, return_tensors="pt")
        alone = model.generate(**ids, max_new_tokens=2, do_sample=False, pad_token_id=tokenizer.pad_token_id)
        assert text == tokenizer.decode(alone[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert generate(model, tokenizer, prompts, "causal", batch_size=2, max_new_tokens=2, prefix_cache=False) == texts


def test_samples_are_the_same_in_any_batch_and_with_the_same_seed(tiny_lm, data_dir):
    model, tokenizer = tiny_lm
    prompts = run_prompts("sst2", "minimal", tokenizer, data_dir, tests=8)
    ids = [f"ex{i}" for i in range(8)]
    sampler = Sampler(samples=4, seed=11, temperature=1.3, top_p=0.95)

    def draw(batch_size: int, sampler: Sampler = sampler, **options):
        return generate(model, tokenizer, prompts, "causal", batch_size=batch_size, max_new_tokens=6, sampler=sampler,
                        example_ids=ids, **options)

    one = draw(1)
    assert [len(samples) for samples in one] == [4] * 8
    assert draw(8) == one
    assert draw(3, prefix_cache=False) == one
    assert len({text for samples in one for text in samples}) > 8  # the samples differ
    assert draw(8, Sampler(samples=4, seed=12, temperature=1.3, top_p=0.95)) != one
    first = draw(8, Sampler(samples=1, seed=11, temperature=1.3, top_p=0.95))
    assert [samples[0] for samples in first] == [samples[0] for samples in one]  # sample 0 whatever n


def test_sampling_the_top_token_only_is_greedy(tiny_lm, data_dir):
    model, tokenizer = tiny_lm
    prompts = run_prompts("sst2", "minimal", tokenizer, data_dir, tests=4)
    greedy = generate(model, tokenizer, prompts, "causal", batch_size=4, max_new_tokens=4)
    sampled = generate(model, tokenizer, prompts, "causal", batch_size=4, max_new_tokens=4,
                       sampler=Sampler(samples=2, seed=1, top_k=1))
    assert sampled == [[text, text] for text in greedy]


@pytest.mark.slow
def test_real_smollm2_scores_equal_the_fields_in_every_format(data_dir, smollm2):
    """SmolLM2-135M-Instruct, where the old tokenization changed every minimal / instruction sequence."""
    model, tokenizer = smollm2
    for task, fmt, shots in [("sst2", "minimal", 2), ("sst2", "instruction", 2), ("glue-rte", "minimal", 1),
                             ("sst2", "chat", 1), ("copa", "instruction", 1)]:
        prompts = run_prompts(task, fmt, tokenizer, data_dir, shots=shots, tests=5)
        if fmt != "chat":
            assert naive_split_differs(tokenizer, prompts)
        np.testing.assert_allclose(score_causal(model, tokenizer, prompts, batch_size=4),
                                   reference_scores(model, tokenizer, prompts), atol=1e-4, err_msg=f"{task} {fmt}")
