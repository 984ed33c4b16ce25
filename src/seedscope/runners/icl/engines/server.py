"""The ``openai`` engine: an OpenAI-compatible server answers the run's prompts.

Scoring follows lm-evaluation-harness's ``local-completions``: the whole text (context and
candidate answer) is sent to ``/v1/completions`` with ``echo`` and ``logprobs``, and the
candidate's log-likelihood is the sum of the log-probabilities of the tokens that start inside
it (by ``text_offset``). A server that returns no log-probabilities of the prompt cannot score:
the run says so in one line. Generation sends completion formats to ``/v1/completions`` and
chat formats' turns to ``/v1/chat/completions`` (the server lays them out with its own
template); greedy answers at temperature 0, sampled ones with ``n``, ``seed``,
``temperature``, ``top_p`` (and ``top_k``, which vLLM, SGLang and llama.cpp read).

A server may quietly ignore what it was sent, and a spread of zero must never be reported as
measured. So the engine checks what it can: a server that returns fewer choices than ``n`` is
asked one draw per request instead, each with its own seed; draws that all come back identical
under different seeds mean the server ignored the seed and temperature. Each finding is a
:class:`~seedscope.errors.IgnoredSettingWarning` and a line of the run's ``engine_ignored`` record,
which ``seedscope analyze`` prints. What else the server did that the results rest on (answers
cut at ``max_tokens``, another model's id, redirects: :meth:`.ServerClient.notes`) is a
:class:`~seedscope.errors.ServerNoteWarning` and a line of ``engine_notes``, once per run.
Every answer read here has passed the checks of :mod:`.answers`.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from seedscope.errors import IgnoredSettingWarning, SeedscopeError, ServerNoteWarning
from seedscope.prompts import Prompts
from seedscope.runners.icl.engines.answers import CHAT, COMPLETIONS, Answer
from seedscope.runners.icl.engines.client import ServerClient
from seedscope.runners.icl.sampling import Sampler
from seedscope.runners.result import StepHook


def local_tokenizer(model: str, trust_remote_code: bool = False):
    """The tokenizer of ``model`` when it is a local folder or GGUF file (token counts, chat templates), else None."""
    from seedscope.runners.checkpoints import load_tokenizer, model_folder

    if not Path(model).exists():
        return None
    return load_tokenizer(model_folder(model), trust_remote_code)


def scoring_payload(context: str, continuation: str) -> dict:
    """lm-eval's ``local-completions`` log-likelihood request: the text echoed with its log-probabilities."""
    return {"prompt": context + continuation, "max_tokens": 1, "echo": True, "logprobs": 1, "temperature": 0}


def continuation_logprob(answer: Answer, context: str, continuation: str) -> float | None:
    """The summed log-probabilities of the tokens starting inside ``continuation`` (None: the server gave none)."""
    logprobs = answer.choices[0].logprobs
    if logprobs is None or not logprobs.text_offset:
        return None
    offsets, values = logprobs.text_offset, logprobs.token_logprobs
    start, end = len(context), len(context) + len(continuation)
    inside = [value for offset, value in zip(offsets, values) if start <= offset < end]
    if not inside or any(value is None for value in inside):
        return None
    return float(sum(inside))


class ServerEngine:
    """The run's prompts asked of the server at ``settings.base_url``."""

    def __init__(self, model: str, settings, *, first: bool = False):
        self.settings = settings
        self.tokenizer = local_tokenizer(model, settings.trust_remote_code)
        self.client = ServerClient(settings, settings.served_model or model, first=first)
        self.ignored: list[str] = []

    def score(self, prompts: Prompts, *, on_step: StepHook | None = None) -> np.ndarray:
        if prompts.messages is not None:
            raise SeedscopeError("scoring reads the log-likelihood of given answers, which a chat endpoint does not "
                                 "return; use a completion format (minimal, instruction) or predict: generate")
        pairs = [(i, j) for i in range(len(prompts.queries)) for j in range(len(prompts.candidates[i]))]
        texts = [prompts.request(i, j) for i, j in pairs]
        if not pairs:
            return np.zeros((len(prompts.queries), 0))
        first = self._probe_scoring(*texts[0])
        answers = [first] + self.client.ask_all([(COMPLETIONS, scoring_payload(*text)) for text in texts[1:]], on_step)
        scores = np.full((len(prompts.queries), max(map(len, prompts.candidates))), -np.inf)
        for (i, j), text, answer in zip(pairs, texts, answers):
            value = continuation_logprob(answer, *text)
            if value is None:
                raise SeedscopeError(f"the server at {self.client.base_url} gave no log-probabilities for the answer "
                                     f"{text[1]!r} of example {i + 1}; it cannot score")
            scores[i, j] = value
        return scores

    def _probe_scoring(self, context: str, continuation: str) -> Answer:
        """The first scoring request, alone: a server that answers without echoed log-probabilities is refused before
        the rest (the advice to generate is given only then: a server that fails otherwise fails in its own words)."""
        answer = self.client.ask(COMPLETIONS, scoring_payload(context, continuation))
        if continuation_logprob(answer, context, continuation) is None:
            raise SeedscopeError(f"the server at {self.client.base_url} returns no log-probabilities of the prompt "
                                 "(echo with logprobs), so it cannot score; use --predict generate with it")
        return answer

    def generate(self, prompts: Prompts, *, max_new_tokens: int, sampler: Sampler | None, example_ids: list[str],
                 on_step: StepHook | None = None) -> list[str] | list[list[str]]:
        endpoint = COMPLETIONS if prompts.messages is None else CHAT
        bodies = ([{"prompt": prompts.prefix + query} for query in prompts.queries] if prompts.messages is None
                  else [{"messages": messages} for messages in prompts.messages])
        if sampler is None:
            requests = [(endpoint, {**body, "max_tokens": max_new_tokens, "temperature": 0}) for body in bodies]
            return [answer.texts()[0] for answer in self.client.ask_all(requests, on_step)]
        return self._sample(endpoint, bodies, max_new_tokens, sampler, example_ids, on_step)

    def _sample(self, endpoint: str, bodies: list[dict], max_new_tokens: int, sampler: Sampler, example_ids: list[str],
                on_step: StepHook | None) -> list[list[str]]:
        shaping = {"max_tokens": max_new_tokens, "temperature": sampler.temperature,
                   **({"top_p": sampler.top_p} if sampler.top_p is not None else {}),
                   **({"top_k": sampler.top_k} if sampler.top_k is not None else {})}
        seeds = np.asarray(sampler.seeds(example_ids)).reshape(len(bodies), sampler.samples)
        if sampler.samples > 1:  # one request of n draws per prompt, if the server honours n
            first = self.client.ask(endpoint, {**bodies[0], **shaping, "n": sampler.samples, "seed": int(seeds[0, 0])},
                                    fewer_choices=True)
            if len(first.choices) == sampler.samples:  # from here on, an answer of fewer choices is a bad one
                rest = self.client.ask_all([(endpoint, {**body, **shaping, "n": sampler.samples, "seed": int(row[0])})
                                            for body, row in zip(bodies[1:], seeds[1:])], on_step)
                return self._checked([answer.texts() for answer in [first, *rest]], sampler)
            self._note(f"the server returned {len(first.choices)} choice(s) when asked for n={sampler.samples}; each "
                       "draw was asked for alone, with its own seed")
        requests = [(endpoint, {**body, **shaping, "seed": int(seed)}) for body, row in zip(bodies, seeds) for seed in row]
        answers = [answer.texts()[0] for answer in self.client.ask_all(requests, on_step)]
        return self._checked([answers[i: i + sampler.samples] for i in range(0, len(answers), sampler.samples)], sampler)

    def _checked(self, drawn: list[list[str]], sampler: Sampler) -> list[list[str]]:
        """The draws, with a note when every prompt's draws came back identical (the server ignored seed and temperature)."""
        if sampler.samples > 1 and drawn and all(len(set(draws)) == 1 for draws in drawn):
            self._note(f"all {sampler.samples} draws of every prompt came back identical at temperature "
                       f"{sampler.temperature:g}: the server ignored the temperature and the seeds, so these samples "
                       "measure no spread")
        return drawn

    def _note(self, text: str) -> None:
        self.ignored.append(text)
        warnings.warn(text, IgnoredSettingWarning, stacklevel=3)

    def record(self) -> dict:
        """What the run keeps of the server; what it did that the results rest on is said here, once per run."""
        client = self.client
        notes = client.notes()
        for text in notes:
            warnings.warn(text, ServerNoteWarning, stacklevel=2)
        return {"engine": "openai", "base_url": client.base_url, "served_model": client.served_model,
                "served_model_ids": sorted(client.served), "system_fingerprints": sorted(client.fingerprints),
                "requests_asked": client.asked, "responses_cached": client.cached,
                "responses_dropped": client.dropped, "response_bytes": client.response_bytes,
                "answers_cut": client.cut, "answers_too_long": client.too_long,
                "redirected_to": sorted(client.redirected), "engine_ignored": self.ignored, "engine_notes": notes,
                "implementation": {"engine": "openai", "concurrency": self.settings.concurrency,
                                   "rerun": self.settings.rerun}}

    def close(self) -> None:
        self.client.close()

