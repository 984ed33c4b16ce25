"""Scoring and generating with a language model, batched.

Scoring: the log-likelihood of each candidate answer after its prompt, summed over the answer's
tokens (as lm-evaluation-harness's ``loglikelihood`` requests). For a causal model the shared
prefix (question + demonstrations) is run once and its key/value cache is reused by every test
example; each test example's query is then read once, and the first token of every candidate
answer is scored from its last position (label words are mostly one token); longer answers
continue from the example's own cache. Without the prefix cache each row carries the whole
prompt. The two give the same scores to float tolerance (tested).

Token boundaries: the prefix is tokenized with the tokenizer's special tokens (a BOS, if the
model uses one), the query and each answer without; ``prefix + query + answer`` ids are what
both paths read.
"""

from __future__ import annotations

import inspect
from typing import Callable

import numpy as np
import torch

from seedscope.prompts import Prompts

#: called with (batches done, batches in total)
StepHook = Callable[[int, int], None]


def _ids(tokenizer, text: str, special: bool) -> list[int]:
    return tokenizer(text, add_special_tokens=special)["input_ids"] if text else []


def encode_prompts(tokenizer, prompts: Prompts) -> tuple[list[int], list[list[int]], list[list[list[int]]]]:
    """(prefix ids, query ids per example, answer ids per example and candidate)."""
    prefix = _ids(tokenizer, prompts.prefix, True)
    queries = [_ids(tokenizer, q, not prefix) for q in prompts.queries]
    answers = [[_ids(tokenizer, c, False) for c in candidates] for candidates in prompts.candidates]
    return prefix, queries, answers


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _keep_last(model) -> dict:
    """``logits_to_keep=1`` where the model takes it: the vocabulary projection of the last position only."""
    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}


@torch.no_grad()
def score_causal(model, tokenizer, prompts: Prompts, *, batch_size: int = 16, prefix_cache: bool = True,
                 on_step: StepHook | None = None) -> np.ndarray:
    """Examples × candidates log-likelihoods (−inf where an example has fewer candidates).

    One forward pass per batch of test examples (batched by query length, so that padding is
    small) reads each query once (left-padded, so every row ends at the same position) and gives
    the first token of every candidate answer at once;
    answers of several tokens continue from each example's own cache in a second pass.
    """
    from transformers import DynamicCache

    prefix, queries, answers = encode_prompts(tokenizer, prompts)
    n = len(queries)
    scores = np.full((n, max(len(a) for a in answers)), -np.inf)
    device = _device(model)
    cached = None
    if prefix_cache and prefix:
        output = model(input_ids=torch.tensor([prefix], device=device), use_cache=True)
        cached = [(layer.keys, layer.values) for layer in output.past_key_values.layers]
    head = [] if cached is not None else prefix  # without the cache every row reads the whole prompt
    start = len(prefix) if cached is not None else 0
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    keep_last = _keep_last(model)
    by_length = sorted(range(n), key=lambda i: len(queries[i]))  # similar lengths share a batch: little padding
    batches = [by_length[first: first + batch_size] for first in range(0, n, batch_size)]
    for done, examples in enumerate(batches, 1):
        rows = [head + queries[i] for i in examples]
        width = max(map(len, rows))
        input_ids = torch.full((len(rows), width), pad, device=device)
        mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
        for r, ids in enumerate(rows):  # left padding: every row's last token sits in the last column
            input_ids[r, width - len(ids):] = torch.tensor(ids, device=device)
            mask[r, width - len(ids):] = 1
        positions = (start + mask.cumsum(dim=1) - 1).clamp(min=0)
        cache = DynamicCache()
        if cached is not None:
            cache = DynamicCache([(k.expand(len(rows), -1, -1, -1), v.expand(len(rows), -1, -1, -1)) for k, v in cached])
            mask = torch.cat([torch.ones((len(rows), start), dtype=torch.long, device=device), mask], dim=1)
        output = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, past_key_values=cache,
                       use_cache=True, **keep_last)
        first = torch.log_softmax(output.logits[:, -1].float(), dim=-1)
        longer = []
        for r, i in enumerate(examples):
            for j, answer in enumerate(answers[i]):
                scores[i, j] = float(first[r, answer[0]])
                if len(answer) > 1:
                    longer.append((r, i, j))
        if longer:
            _continue(model, output.past_key_values, mask, positions[:, -1], longer, answers, scores, pad)
        if on_step:
            on_step(done, len(batches))
    return scores


def _continue(model, cache, mask, last_position, longer, answers, scores, pad) -> None:
    """Add the log-likelihood of the 2nd … last token of multi-token answers, from each example's cache."""
    from transformers import DynamicCache

    device = mask.device
    rows = torch.tensor([r for r, _, _ in longer], device=device)
    selected = DynamicCache([(layer.keys[rows], layer.values[rows]) for layer in cache.layers])
    tails = [answers[i][j] for _, i, j in longer]
    width = max(len(t) for t in tails) - 1
    input_ids = torch.full((len(tails), width), pad, device=device)
    tail_mask = torch.zeros((len(tails), width), dtype=torch.long, device=device)
    for k, tail in enumerate(tails):
        input_ids[k, : len(tail) - 1] = torch.tensor(tail[:-1], device=device)
        tail_mask[k, : len(tail) - 1] = 1
    positions = last_position[rows].unsqueeze(1) + 1 + torch.arange(width, device=device)
    logits = model(input_ids=input_ids, attention_mask=torch.cat([mask[rows], tail_mask], dim=1),
                   position_ids=positions, past_key_values=selected, use_cache=True).logits
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    for k, (_, i, j) in enumerate(longer):
        tail = tails[k]
        scores[i, j] += sum(float(logprobs[k, t - 1, tail[t]]) for t in range(1, len(tail)))


@torch.no_grad()
def score_seq2seq(model, tokenizer, prompts: Prompts, *, batch_size: int = 16,
                  on_step: StepHook | None = None) -> np.ndarray:
    """Examples × candidates log-likelihood of each answer as the decoder's output for the whole prompt."""
    n = len(prompts.queries)
    width = max(len(c) for c in prompts.candidates)
    scores = np.full((n, width), -np.inf)
    device = _device(model)
    batches = [range(start, min(start + batch_size, n)) for start in range(0, n, batch_size)]
    for done, examples in enumerate(batches, 1):
        pairs = [(i, j) for i in examples for j in range(len(prompts.candidates[i]))]
        encoded = tokenizer([prompts.prefix + prompts.queries[i] for i, _ in pairs], return_tensors="pt",
                            padding=True).to(device)
        targets = tokenizer([prompts.candidates[i][j].strip() for i, j in pairs], return_tensors="pt",
                            padding=True).to(device)
        labels = targets["input_ids"].masked_fill(targets["attention_mask"] == 0, -100)
        logits = model(**encoded, labels=labels).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        gathered = logprobs.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1) * (labels != -100)
        for r, (i, j) in enumerate(pairs):
            scores[i, j] = float(gathered[r].sum())
        if on_step:
            on_step(done, len(batches))
    return scores


@torch.no_grad()
def generate(model, tokenizer, prompts: Prompts, kind: str, *, batch_size: int = 16, max_new_tokens: int = 5,
             on_step: StepHook | None = None) -> list[str]:
    """The greedy continuation of every prompt (``max_new_tokens`` at most), decoded to text."""
    device = _device(model)
    texts = [prompts.prefix + query for query in prompts.queries]
    out: list[str] = []
    side = tokenizer.padding_side
    tokenizer.padding_side = "left" if kind == "causal" else "right"  # decoder-only models continue on the right
    try:
        batches = [texts[start: start + batch_size] for start in range(0, len(texts), batch_size)]
        for done, batch in enumerate(batches, 1):
            encoded = tokenizer(batch, return_tensors="pt", padding=True).to(device)
            generated = model.generate(**encoded, max_new_tokens=max_new_tokens, do_sample=False,
                                       pad_token_id=tokenizer.pad_token_id)
            new = generated[:, encoded["input_ids"].shape[1]:] if kind == "causal" else generated
            out += tokenizer.batch_decode(new, skip_special_tokens=True)
            if on_step:
                on_step(done, len(batches))
    finally:
        tokenizer.padding_side = side
    return out
