"""The token ids of a run's prompts as lm-evaluation-harness reads them, and which ones the prefix cache serves.

The field's rule (lm-eval's ``_encode_pair`` and ``tok_encode``): the context's trailing
whitespace moves to the continuation (:meth:`seedscope.prompts.Prompts.request`);
``context + continuation`` is tokenized as one string with the tokenizer's own special tokens
(a BOS where the tokenizer adds one, none where the text already starts with it), and the
continuation's ids are those past the length of the context's own ids. The model reads
``context ids + continuation ids``.

The demonstrations' ids are cached once per run only where they are a token-exact prefix of an
example's context ids. The prefix is cut before its trailing whitespace, a boundary that no
merge of a byte-level BPE or SentencePiece tokenizer crosses, and every example is checked: an
example whose context tokenizes differently there reads its whole context instead (counted in
:attr:`PromptTokens.uncached`), so cached scores always equal whole-string scores.
"""

from __future__ import annotations

from dataclasses import dataclass

from seedscope.prompts import Prompts


@dataclass(frozen=True)
class PromptTokens:
    """A run's prompts as ids: the cached ``prefix`` (empty: nothing cached), per example its context ids
    (those after the prefix where ``cached[i]``, else all of them) and per candidate its continuation ids."""

    prefix: list[int]
    contexts: list[list[int]]
    cached: list[bool]
    answers: list[list[list[int]]]

    @property
    def uncached(self) -> int:
        """Examples that read their whole context (no prefix cache for them)."""
        return sum(not c for c in self.cached)

    def context(self, i: int) -> list[int]:
        """Example ``i``'s whole context ids (what lm-eval's ``context_enc`` is)."""
        return (self.prefix if self.cached[i] else []) + self.contexts[i]


def encode_texts(tokenizer, texts: list[str]) -> list[list[int]]:
    """Each text's ids with the tokenizer's special tokens, except a BOS already written in the text (lm-eval's rule)."""
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    marker = tokenizer.decode([bos]) if bos is not None else None
    starts = [bool(marker) and text.startswith(marker) for text in texts]
    ids: list[list[int] | None] = [None] * len(texts)
    for special in (True, False):
        chosen = [i for i, start in enumerate(starts) if start != special]
        if chosen:
            encoded = tokenizer([texts[i] for i in chosen], add_special_tokens=special)["input_ids"]
            for i, row in zip(chosen, encoded):
                ids[i] = list(row)
    return ids  # type: ignore[return-value]


def encode_requests(tokenizer, prompts: Prompts, *, prefix_cache: bool = True) -> PromptTokens:
    """Ids of every (context, continuation) request of ``prompts``, split as the field splits them."""
    n = len(prompts.queries)
    requests = [[prompts.request(i, j) for j in range(len(prompts.candidates[i]))] for i in range(n)]
    contexts = encode_texts(tokenizer, [row[0][0] for row in requests])
    wholes = iter(encode_texts(tokenizer, [context + continuation for row in requests for context, continuation in row]))
    answers = [[next(wholes)[len(contexts[i]):] for _ in requests[i]] for i in range(n)]
    head = prompts.prefix.rstrip()
    prefix = encode_texts(tokenizer, [head])[0] if prefix_cache and head else []
    cached = [bool(prefix) and len(ids) > len(prefix) and ids[: len(prefix)] == prefix for ids in contexts]
    if not any(cached):
        prefix = []
    return PromptTokens(prefix, [ids[len(prefix):] if c else ids for ids, c in zip(contexts, cached)], cached, answers)
