"""Rendering a run's prompts: one shared prefix (question + demonstrations), one query per test example.

The prefix is identical for every test example of a run, so a causal language model computes
its key/value cache once; each query and candidate answer is then scored on top of it.
``prefix + query + candidate`` is exactly the text a model without the cache would read, and
:meth:`Prompts.request` splits it into (context, continuation) as lm-evaluation-harness does:
whitespace at the end of the context belongs to the continuation.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from seedscope.errors import SeedscopeError
from seedscope.prompts.formats import PromptFormat
from seedscope.prompts.tasks import TaskPrompt

#: the columns of a prompted run's predictions that keep what it scored (beside the shared prefix)
QUERY, CONTINUATIONS = "query", "continuations"


@dataclass(frozen=True)
class Prompts:
    """A run's prompts: ``prefix`` shared, and per test example its query and candidate answers.

    A chat format also keeps each test example's ``messages`` (system, demonstrations, question), which a
    server's chat endpoint lays out with its own template.
    """

    prefix: str
    queries: list[str]
    candidates: list[list[str]]
    messages: list[list[dict[str, str]]] | None = None

    def full(self, i: int, j: int) -> str:
        """The whole text of test example ``i`` answered with candidate ``j`` (what the model scores)."""
        return self.prefix + self.queries[i] + self.candidates[i][j]

    def request(self, i: int, j: int) -> tuple[str, str]:
        """(context, continuation) of test example ``i`` answered with candidate ``j``, split as the field splits it."""
        return split_request(self.prefix + self.queries[i], self.candidates[i][j])


def split_request(context: str, continuation: str) -> tuple[str, str]:
    """Whitespace at the end of ``context`` moves to the start of ``continuation`` (lm-evaluation-harness's
    ``_encode_pair``), so that a word's leading space is scored with the word."""
    kept = context.rstrip()
    return kept, context[len(kept):] + continuation


def render_input(prompt: TaskPrompt, row) -> str:
    """An example's text(s), each after its field name when the task has two."""
    first, second = prompt.fields
    text = str(row.text)
    pair = getattr(row, "text_pair", None)
    if second is None or pair is None or pd.isna(pair):
        return text
    return f"{first}: {text}\n{second}: {pair}"


def _answer(prompt: TaskPrompt, row) -> str:
    return prompt.answers(getattr(row, "choices", None))[int(row.label)]


def _options(prompt: TaskPrompt, row=None) -> str:
    answers = prompt.answers(getattr(row, "choices", None)) if row is not None else list(prompt.words or [])
    return "\n".join(f"{i}. {answer}" for i, answer in enumerate(answers, 1))


def _with_choices(prompt: TaskPrompt, row) -> str:
    """Multiple choice: the choices are part of the input (every example has its own)."""
    text = render_input(prompt, row)
    if prompt.words is None:
        text += "\n" + _options(prompt, row)
    return text


def build_prompts(fmt: PromptFormat, prompt: TaskPrompt, demos: pd.DataFrame, tests: pd.DataFrame,
                  tokenizer=None, *, plain_chat: bool = False) -> Prompts:
    """The prompts of one run: ``demos`` (labelled, in prompt order) shown before every row of ``tests``.

    A chat format needs the ``tokenizer`` whose chat template lays the turns out; with ``plain_chat``
    (a server that applies its own template) and no tokenizer, the turns are written ``role: content``
    for the record.
    """
    demo_rows = list(demos.itertuples(index=False))
    test_rows = list(tests.itertuples(index=False))
    candidates = [[fmt.answer_prefix + answer for answer in prompt.answers(getattr(r, "choices", None))]
                  for r in test_rows]
    if fmt.chat:
        return _chat(fmt, prompt, demo_rows, test_rows, candidates, tokenizer, plain_chat)
    header = fmt.header.format(question=prompt.question, options=_options(prompt)) if fmt.header else ""
    shown = [fmt.query.format(input=_with_choices(prompt, row)) + fmt.answer_prefix + _answer(prompt, row)
             for row in demo_rows]
    prefix = header + "".join(example + fmt.separator for example in shown)
    queries = [fmt.query.format(input=_with_choices(prompt, row)) for row in test_rows]
    return Prompts(prefix, queries, candidates)


def _chat(fmt, prompt, demo_rows, test_rows, candidates, tokenizer, plain: bool) -> Prompts:
    system = prompt.question + ("" if prompt.words is None else " Answer with one of: " + ", ".join(prompt.words) + ".")
    turns = [{"role": "system", "content": system}]
    for row in demo_rows:
        turns += [{"role": "user", "content": fmt.query.format(input=_with_choices(prompt, row))},
                  {"role": "assistant", "content": _answer(prompt, row)}]
    messages = [turns + [{"role": "user", "content": fmt.query.format(input=_with_choices(prompt, row))}]
                for row in test_rows]
    if tokenizer is None and plain:
        prefix = _plain(turns)
        return Prompts(prefix, [_plain(whole)[len(prefix):] for whole in messages], candidates, messages)
    if tokenizer is None or not getattr(tokenizer, "chat_template", None):
        raise SeedscopeError(f"prompt format {fmt.name!r} needs a model with a chat template; this model has none "
                             "(use the minimal or instruction format)")
    prefix = tokenizer.apply_chat_template(turns, tokenize=False)
    queries = []
    for whole in messages:
        text = tokenizer.apply_chat_template(whole, tokenize=False, add_generation_prompt=True)
        if not text.startswith(prefix):
            raise SeedscopeError("this model's chat template rewrites earlier turns, so the demonstrations cannot be "
                                 "shared between test examples; use the minimal or instruction format")
        queries.append(text[len(prefix):])
    return Prompts(prefix, queries, candidates, messages)


def _plain(turns: list[dict[str, str]]) -> str:
    return "".join(f"{turn['role']}: {turn['content']}\n" for turn in turns)
