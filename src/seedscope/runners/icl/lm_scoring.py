"""Scoring and generating with a language model, batched.

Scoring: the log-likelihood of each candidate answer after its prompt, summed over the answer's
tokens, on exactly the ids lm-evaluation-harness's ``loglikelihood`` reads
(:mod:`seedscope.runners.icl.lm_tokens`: the whole string tokenized once, split at the context's
length). For a causal model the shared prefix (question + demonstrations) is run once and its
key/value cache is reused by every test example whose context starts with the prefix's ids;
each test example's context is then read once, and the first token of every candidate answer
is scored from its last position (label words are mostly one token); longer answers continue
from the example's own cache. An example that does not start with the prefix's ids, or every
example without the prefix cache, reads its whole context. Both give the scores of a plain
forward pass over the whole string to float tolerance (tested on the real SmolLM2).
"""

from __future__ import annotations

import inspect

import numpy as np
import torch

from seedscope.errors import SeedscopeError
from seedscope.prompts import Prompts
from seedscope.runners.icl.lm_tokens import encode_requests, encode_texts
from seedscope.runners.icl.sampling import Sampler
from seedscope.runners.result import StepHook


def _device(model) -> torch.device:
    return next(model.parameters()).device


def _parameters(model) -> set[str]:
    return set(inspect.signature(model.forward).parameters)


def _keep_last(model) -> dict:
    """``logits_to_keep=1`` where the model takes it: the vocabulary projection of the last position only."""
    return {"logits_to_keep": 1} if "logits_to_keep" in _parameters(model) else {}


def _cache_argument(model) -> str:
    """The name of the key/value-cache argument: ``cache`` (transformers ≥ 5.24) or ``past_key_values``."""
    return "cache" if "cache" in _parameters(model) else "past_key_values"


def _cache_of(output):
    """The key/value cache a forward pass returned, under either name."""
    cache = getattr(output, "cache", None)
    return cache if cache is not None else output.past_key_values


def _padded(rows: list[list[int]], pad: int, device, side: str = "left") -> tuple[torch.Tensor, torch.Tensor]:
    """(ids, attention mask); left padding ends every row in the last column."""
    width = max(map(len, rows))
    input_ids = torch.full((len(rows), width), pad, device=device)
    mask = torch.zeros((len(rows), width), dtype=torch.long, device=device)
    for r, ids in enumerate(rows):
        where = slice(width - len(ids), width) if side == "left" else slice(0, len(ids))
        input_ids[r, where] = torch.tensor(ids, device=device)
        mask[r, where] = 1
    return input_ids, mask


@torch.no_grad()
def score_causal(model, tokenizer, prompts: Prompts, *, batch_size: int = 16, prefix_cache: bool = True,
                 on_step: StepHook | None = None, greedy: np.ndarray | None = None,
                 padding_side: str = "left") -> np.ndarray:
    """Examples × candidates log-likelihoods (−inf where an example has fewer candidates).

    ``greedy``, where given (a boolean array of the scores' shape), is filled in with lm-eval's
    ``is_greedy``: whether every token of the answer is the model's most likely next token.

    One forward pass per batch of test examples (batched by context length, so that padding is
    small) reads each context once (left-padded, so every row ends at the same position) and
    gives the first token of every candidate answer at once; answers of several tokens continue
    from each example's own cache in a second pass. Examples that read the cached prefix and
    those that read their whole context go in separate batches. ``padding_side="right"`` pads
    after each context instead and reads every row's last real position (an implementation
    setting: the same scores up to the kernels' rounding).
    """
    from transformers import DynamicCache

    tokens = encode_requests(tokenizer, prompts, prefix_cache=prefix_cache)
    n = len(tokens.contexts)
    scores = np.full((n, max(len(a) for a in tokens.answers)), -np.inf)
    device = _device(model)
    cache_argument = _cache_argument(model)
    cached = None
    if tokens.prefix:
        output = model(input_ids=torch.tensor([tokens.prefix], device=device), use_cache=True)
        cached = [(layer.keys, layer.values) for layer in _cache_of(output).layers]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    keep_last = _keep_last(model) if padding_side == "left" else {}
    batches = []
    for reads_cache in (True, False):  # similar lengths share a batch: little padding
        group = sorted((i for i in range(n) if tokens.cached[i] == reads_cache), key=lambda i: len(tokens.contexts[i]))
        batches += [(reads_cache, group[first: first + batch_size]) for first in range(0, len(group), batch_size)]
    for done, (reads_cache, examples) in enumerate(batches, 1):
        input_ids, mask = _padded([tokens.contexts[i] for i in examples], pad, device, padding_side)
        last = mask.sum(dim=1) - 1 if padding_side == "right" else torch.full((len(examples),), -1, device=device)
        start = len(tokens.prefix) if reads_cache else 0
        positions = (start + mask.cumsum(dim=1) - 1).clamp(min=0)
        cache = DynamicCache()
        if reads_cache:
            rows = len(examples)
            cache = DynamicCache([(k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1)) for k, v in cached])
            mask = torch.cat([torch.ones((rows, start), dtype=torch.long, device=device), mask], dim=1)
        output = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True,
                       **{cache_argument: cache}, **keep_last)
        first = torch.log_softmax(output.logits[torch.arange(len(examples), device=device), last].float(), dim=-1)
        longer = []
        for r, i in enumerate(examples):
            for j, answer in enumerate(tokens.answers[i]):
                scores[i, j] = float(first[r, answer[0]]) if answer else 0.0  # no ids of its own: lm-eval scores 0
                if greedy is not None:
                    greedy[i, j] = not answer or int(first[r].argmax()) == answer[0]
                if len(answer) > 1:
                    longer.append((r, i, j))
        if longer:
            _continue(model, _cache_of(output), mask, positions[:, -1], longer, tokens.answers, scores, pad, greedy)
        if on_step:
            on_step(done, len(batches))
    return scores


def _continue(model, cache, mask, last_position, longer, answers, scores, pad, greedy=None) -> None:
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
                   position_ids=positions, use_cache=True, **{_cache_argument(model): selected}).logits
    logprobs = torch.log_softmax(logits.float(), dim=-1)
    for k, (_, i, j) in enumerate(longer):
        tail = tails[k]
        scores[i, j] += sum(float(logprobs[k, t - 1, tail[t]]) for t in range(1, len(tail)))
        if greedy is not None:
            greedy[i, j] = greedy[i, j] and all(int(logprobs[k, t - 1].argmax()) == tail[t] for t in range(1, len(tail)))


@torch.no_grad()
def score_seq2seq(model, tokenizer, prompts: Prompts, *, batch_size: int = 16,
                  on_step: StepHook | None = None) -> np.ndarray:
    """Examples × candidates log-likelihood of each answer as the decoder's output for its context.

    As lm-eval's sequence-to-sequence requests: the context with its special tokens goes to the
    encoder, the continuation's own ids (no special tokens) are the decoder's labels.
    """
    n = len(prompts.queries)
    scores = np.full((n, max(len(c) for c in prompts.candidates)), -np.inf)
    device = _device(model)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    batches = [range(start, min(start + batch_size, n)) for start in range(0, n, batch_size)]
    for done, examples in enumerate(batches, 1):
        pairs = [(i, j) for i in examples for j in range(len(prompts.candidates[i]))]
        requests = [prompts.request(i, j) for i, j in pairs]
        input_ids, mask = _padded(encode_texts(tokenizer, [context for context, _ in requests]), pad, device, "right")
        targets = tokenizer([continuation for _, continuation in requests], add_special_tokens=False)["input_ids"]
        labels, _ = _padded([list(t) or [-100] for t in targets], -100, device, "right")  # an empty answer scores 0
        logits = model(input_ids=input_ids, attention_mask=mask, labels=labels).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1)
        gathered = logprobs.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1) * (labels != -100)
        for r, (i, j) in enumerate(pairs):
            scores[i, j] = float(gathered[r].sum())
        if on_step:
            on_step(done, len(batches))
    return scores


@torch.no_grad()
def generate(model, tokenizer, prompts: Prompts, kind: str, *, batch_size: int = 16, max_new_tokens: int = 5,
             prefix_cache: bool = True, on_step: StepHook | None = None, sampler: Sampler | None = None,
             example_ids: list[str] | None = None, stop: list[str] | None = None) -> list[str] | list[list[str]]:
    """The greedy continuation of every prompt (``max_new_tokens`` at most, fewer once every row has ended), as text.

    With a ``sampler``, its ``samples`` sampled continuations of every prompt instead (a list per
    prompt), each drawn from the seed of its prompt's ``example_ids`` entry and its index. A row
    also ends once its text holds one of the ``stop`` strings (the text is returned whole: cut it).
    The prompt's ids are those scoring reads (:func:`~seedscope.runners.icl.lm_tokens.encode_texts` of the
    whole text). A decoder-only model reads the ids every prompt shares (the demonstrations) once
    and continues each batch from their cache, the rest of each prompt left-padded, batched by
    length; each prompt is read once and its cache serves all its samples, decoded side by side.
    An encoder-decoder model goes through ``model.generate`` (greedy only).
    """
    ids = encode_texts(tokenizer, [prompts.prefix + query for query in prompts.queries])
    if kind == "causal":
        names = example_ids if example_ids is not None else [str(i) for i in range(len(ids))]
        texts = _generate_causal(model, tokenizer, ids, batch_size, max_new_tokens, prefix_cache, on_step, sampler, names,
                                 stop or [])
        return texts if sampler is None else [texts[i: i + sampler.samples] for i in range(0, len(texts), sampler.samples)]
    if sampler is not None:
        raise SeedscopeError("sampled generation needs a decoder-only language model; this one is sequence-to-sequence")
    device = _device(model)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    out: list[str] = []
    batches = [ids[start: start + batch_size] for start in range(0, len(ids), batch_size)]
    for done, batch in enumerate(batches, 1):
        input_ids, mask = _padded(batch, pad, device, "right")
        generated = model.generate(input_ids=input_ids, attention_mask=mask, max_new_tokens=max_new_tokens,
                                   do_sample=False, pad_token_id=pad)
        out += tokenizer.batch_decode(generated, skip_special_tokens=True)
        if on_step:
            on_step(done, len(batches))
    return out


def _shared_prefix(rows: list[list[int]]) -> list[int]:
    """The ids every row starts with, leaving each row at least one id of its own."""
    shortest = min(map(len, rows))
    length = 0
    while length < shortest - 1 and all(row[length] == rows[0][length] for row in rows):
        length += 1
    return rows[0][:length]


def _end_ids(model) -> set[int]:
    eos = model.generation_config.eos_token_id if model.generation_config is not None else None
    return set(eos if isinstance(eos, (list, tuple)) else [] if eos is None else [eos])


def _generate_causal(model, tokenizer, ids, batch_size, max_new_tokens, prefix_cache, on_step, sampler,
                     names, stop) -> list[str]:
    """Decoding from the shared prefix's cache, stopping once every row of a batch has ended.

    Greedy: one text per prompt. Sampled: ``sampler.samples`` texts per prompt, prompt by prompt;
    each batch's prompts are read once, then their cache is repeated for the samples and given room
    for the new tokens (:mod:`~seedscope.runners.icl.kv_buffer`). A row that has ended leaves the
    batch, so each step computes only the rows still decoding.
    """
    from transformers import DynamicCache

    from seedscope.runners.icl.kv_buffer import with_room

    device = _device(model)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    prefix = _shared_prefix(ids) if prefix_cache and len(ids) > 1 else []
    cached = None
    if prefix:
        output = model(input_ids=torch.tensor([prefix], device=device), use_cache=True)
        cached = [(layer.keys, layer.values) for layer in _cache_of(output).layers]
    ends, cache_argument, keep_last = _end_ids(model), _cache_argument(model), _keep_last(model)
    n = sampler.samples if sampler else 1
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))  # similar lengths share a batch: little padding
    batches = [order[first: first + batch_size] for first in range(0, len(order), batch_size)]
    texts: dict[int, list[str]] = {}
    for done, examples in enumerate(batches, 1):
        rows = len(examples)
        input_ids, mask = _padded([ids[i][len(prefix):] for i in examples], pad, device)
        positions = (len(prefix) + mask.cumsum(dim=1) - 1).clamp(min=0)
        cache = DynamicCache()
        if cached:
            cache = DynamicCache([(k.expand(rows, -1, -1, -1), v.expand(rows, -1, -1, -1)) for k, v in cached])
            mask = torch.cat([torch.ones((rows, len(prefix)), dtype=torch.long, device=device), mask], dim=1)
        output = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True,
                       **{cache_argument: cache}, **keep_last)  # each prompt read once, for all its samples
        cache, logits = _cache_of(output), output.logits[:, -1]
        if n > 1:
            cache.batch_repeat_interleave(n)
            mask, positions, logits = (t.repeat_interleave(n, dim=0) for t in (mask, positions, logits))
        cache = with_room(cache, max_new_tokens)
        uniforms = sampler.uniforms([names[i] for i in examples], max_new_tokens) if sampler else None
        new = [[] for _ in range(rows * n)]
        ended = [False] * (rows * n)
        active = torch.arange(rows * n)  # the rows still decoding: an ended row leaves the batch and its cache
        for step in range(max_new_tokens):
            chosen = sampler.draw(logits, uniforms[active, step]) if sampler else logits.argmax(dim=-1)
            for r, token in zip(active.tolist(), chosen.tolist()):
                ended[r] = token in ends
                if not ended[r]:
                    new[r].append(token)
                    ended[r] = bool(stop) and any(term in tokenizer.decode(new[r]) for term in stop)
            if all(ended) or step == max_new_tokens - 1:
                break
            going = torch.tensor([not ended[r] for r in active.tolist()])
            if not going.all():
                index = going.nonzero().squeeze(1)
                cache.batch_select_indices(index.to(device))
                active, chosen, mask, positions = active[index], *(t[index.to(device)] for t in (chosen, mask, positions))
            mask = torch.cat([mask, torch.ones((len(active), 1), dtype=torch.long, device=device)], dim=1)
            positions = positions[:, -1:] + 1
            output = model(input_ids=chosen.unsqueeze(1), attention_mask=mask, position_ids=positions, use_cache=True,
                           **{cache_argument: cache}, **keep_last)
            cache, logits = _cache_of(output), output.logits[:, -1]
        decoded = tokenizer.batch_decode(new, skip_special_tokens=True)
        for k, i in enumerate(examples):
            texts[i] = decoded[k * n: (k + 1) * n]
        if on_step:
            on_step(done, len(batches))
    return [text for i in range(len(ids)) for text in texts[i]]
