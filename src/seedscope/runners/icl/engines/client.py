"""Asking an OpenAI-compatible server: the ``openai`` client, retries, the response cache, concurrency, clear errors.

The ``openai`` client sends each request (its raw body read here, never parsed by the client);
this module asks again what is worth asking again — 408, 409, 429 and 5xx answers, refused,
reset or cut connections, timeouts — with exponential backoff, honouring ``Retry-After`` up to
``request_timeout`` and stopping at once, and saying so, where the server asks for a longer
wait. Every answer is checked by the one parser (:mod:`.answers`) before it is used or cached;
a checked one is cached in the store the moment it arrives (:mod:`seedscope.store.responses`),
and a cached one is checked again when read (a row that fails is dropped and asked again).
Requests go ``concurrency`` at a time; while any waits, the progress display says how many
are in flight, for how long, and how many were retried (:func:`seedscope.progress.say_status`).
Each failure is one line (:mod:`.failures`), never a traceback. The API key is read from the
environment variable the run names, and masked in every text a server or the client gives
before it reaches the terminal, a log, a note or the store.
"""

from __future__ import annotations

import os
import random
import threading
import time
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any, Sequence

from seedscope.errors import SeedscopeError
from seedscope.progress import say_status
from seedscope.runners.icl.engines.answers import CHAT, COMPLETIONS, Answer, BadAnswer, far_too_long, parse_answer
from seedscope.runners.icl.engines.failures import (
    asked_again, excerpt, masked, masked_bytes, reason, request_text, retried, retry_after, short_cause, status_line,
    transport_line,
)
from seedscope.runners.result import StepHook
from seedscope.store.responses import ResponseCache, request_key

__all__ = ["CHAT", "COMPLETIONS", "FIRST_REQUEST_SECONDS", "ServerClient", "api_key"]

#: the most seconds the study's first request waits in all (its tries together) unless request_timeout is set
FIRST_REQUEST_SECONDS = 45.0
#: the longest wait of each try of that first request
FIRST_TRY_SECONDS = 20.0
#: a request in flight this long is said in the status line
SAID_AFTER_SECONDS = 2.0


def api_key(variable: str | None) -> str | None:
    """The key in ``variable`` (None: a local server that needs none), or a one-line error."""
    if variable is None:
        return None
    key = os.environ.get(variable)
    if not key:
        raise SeedscopeError(f"the API key variable {variable} (api_key_env) is not set in this environment; "
                             f"export {variable}=… or leave api_key_env out for a server that needs no key")
    return key


class ServerClient:
    """One run's connection to the server at ``base_url``, serving ``served_model``.

    ``first``: this client asks the study's first request, which gives up within :data:`FIRST_REQUEST_SECONDS`
    unless ``request_timeout`` was set (a server that takes and never answers is said within a minute).
    """

    def __init__(self, settings, served_model: str, *, first: bool = False):
        import openai

        self.served_model = served_model
        self.concurrency = settings.concurrency
        self.rerun = settings.rerun
        self._key = api_key(settings.api_key_env)
        self._url = settings.base_url  # what the cache keys on (hashed: a key in the URL is never stored)
        self.base_url = masked(settings.base_url, self._key)  # what is shown
        bounded = first and "request_timeout" not in settings.model_fields_set
        self._timeout = min(settings.request_timeout, FIRST_TRY_SECONDS) if bounded else settings.request_timeout
        self._budget = FIRST_REQUEST_SECONDS if bounded else None
        self._retries = settings.max_retries
        self._client = openai.OpenAI(base_url=settings.base_url, api_key=self._key or "none", max_retries=0,
                                     timeout=self._timeout)
        self._cache = ResponseCache.of_sweep()
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # the first failure of ask_all (or Ctrl-C): waits end, nothing new is sent
        self._traffic = _Traffic(self.base_url, self._timeout, self._budget)
        self.asked = self.cached = self.dropped = self.cut = self.too_long = self.response_bytes = 0
        self.served: set[str] = set()
        self.fingerprints: set[str] = set()
        self.redirected: set[str] = set()

    def ask(self, endpoint: str, payload: dict[str, Any], *, fewer_choices: bool = False) -> Answer:
        """The server's checked answer to one request (the cache's, where it holds one that passes the checks).

        ``fewer_choices``: an answer of 1 to ``n`` choices passes (the request that finds out whether ``n`` is honoured).
        """
        payload = {"model": self.served_model, **payload}
        key = request_key(self._url, endpoint, payload, self.rerun)
        answer = self._cached(key, endpoint, payload, fewer_choices)
        fresh = answer is None
        if fresh:
            answer = self._fetch(endpoint, payload, fewer_choices)
            if self._cache is not None:
                self._cache.put(key, answer.cached())
        with self._lock:
            self.asked += fresh
            self.cached += not fresh
            self.response_bytes += answer.raw_size or 0
            if answer.model:
                self.served.add(answer.model)
            if answer.system_fingerprint:
                self.fingerprints.add(answer.system_fingerprint)
            if not payload.get("echo"):  # a scoring request stops at its 1 token by design
                self.cut += sum(choice.finish_reason == "length" for choice in answer.choices)
                self.too_long += far_too_long(answer, payload)
        return answer

    def ask_all(self, requests: Sequence[tuple[str, dict]], on_step: StepHook | None = None) -> list[Answer]:
        """Every (endpoint, payload) asked, ``concurrency`` at a time, answers in the requests' order; the first
        failure ends it (what was answered is cached) and is the one raised."""
        answers: list[Answer | None] = [None] * len(requests)
        done = 0
        failures: list[BaseException] = []

        def one(index: int) -> None:
            nonlocal done
            if self._stopping.is_set():
                return
            try:
                answers[index] = self.ask(*requests[index])
            except BaseException as error:
                with self._lock:
                    failures.append(error)
                self._stopping.set()
                return
            with self._lock:
                done += 1
                finished = done
            if on_step is not None:
                on_step(finished, len(requests))

        pool = ThreadPoolExecutor(self.concurrency)
        try:
            futures = [pool.submit(one, i) for i in range(len(requests))]
            while futures and not self._stopping.is_set():
                _, pending = wait(futures, timeout=0.2)
                futures = list(pending)
        finally:  # a failure or Ctrl-C asks nothing more: the requests not started are dropped, the waiting ones end
            self._stopping.set()
            pool.shutdown(wait=False, cancel_futures=True)
        if failures:
            raise failures[0]
        self._stopping.clear()
        return answers  # type: ignore[return-value]

    def notes(self) -> list[str]:
        """What the server did that the run's results rest on, one sentence each (the same words for every run)."""
        said = []
        if self.cut:
            said.append("answers stopped at max_tokens (finish_reason: length), so what came after was not read; "
                        "raise --max-new-tokens if a label word can come later")
        if self.too_long:
            said.append("answers held far more text than max_tokens tokens can (over 64 characters a token): the "
                        "server did not stop at max_tokens")
        others = sorted(model for model in self.served if not model.startswith(self.served_model))
        if others:
            said.append(f"the server answered as model {', '.join(map(repr, others))} when {self.served_model!r} was "
                        "asked for")
        if self.redirected:
            said.append(f"the server redirected requests to {', '.join(sorted(self.redirected))}, and they were "
                        "followed; give that URL as --base-url to ask it directly")
        if self.dropped:
            said.append("cached answers that failed the checks (written before seedscope checked answers, or damaged) "
                        "were dropped and asked again")
        return [masked(text, self._key) for text in said]

    def _cached(self, key: str, endpoint: str, payload: dict, fewer_choices: bool) -> Answer | None:
        text = self._cache.get(key) if self._cache is not None else None
        if text is None:
            return None
        try:
            return parse_answer(masked(text, self._key), endpoint, payload, fewer_choices=fewer_choices, fresh=False)
        except BadAnswer:
            self._cache.drop(key)  # type: ignore[union-attr]
            with self._lock:
                self.dropped += 1
            return None

    def _fetch(self, endpoint: str, payload: dict, fewer_choices: bool) -> Answer:
        """Ask until an answer comes, the retries are spent, or the server asks for a wait longer than seedscope's."""
        import openai

        request = request_text(endpoint, payload)
        deadline = None if self._budget is None else time.monotonic() + self._budget
        with self._traffic.waiting():
            for tries in range(1, self._retries + 2):
                timeout = self._timeout if deadline is None else min(self._timeout, deadline - time.monotonic())
                try:
                    response = self._send(endpoint, payload, timeout)
                except openai.APIStatusError as error:
                    line, pause = self._after_status(error, request, tries)
                    why = f"{error.status_code}"
                except openai.APIConnectionError as error:  # timeouts too
                    line = masked(transport_line(self.base_url, error, tries, self._timeout), self._key)
                    pause = _backoff(tries) if asked_again(error.__cause__ or error) else None
                    why = short_cause(error)
                else:
                    return self._checked(response, endpoint, payload, request, fewer_choices)
                if tries > self._retries or pause is None:
                    raise SeedscopeError(line)
                if deadline is not None and time.monotonic() + pause + 1 >= deadline:
                    raise SeedscopeError(self._first_request_line(line, why, tries))
                self._traffic.retrying(why, pause)
                if self._stopping.wait(pause):
                    raise SeedscopeError(line)
        raise AssertionError("unreachable")  # pragma: no cover

    def _first_request_line(self, line: str, why: str, tries: int) -> str:
        """The line of a study's first request that ran out of its time."""
        if why == "a timeout":
            return (f"the server at {self.base_url} took the study's first request but did not answer within "
                    f"{self._budget:g} s, asked {tries} time(s); if it is slow to start (loading its model), set "
                    "request_timeout, e.g. --set request_timeout=300")
        return f"{line}; the study's first request gives up after {self._budget:g} s (set request_timeout to wait longer)"

    def _send(self, endpoint: str, payload: dict, timeout: float):
        """One try: the server's raw HTTP response to ``payload`` (an error status or a lost connection raises)."""
        payload = dict(payload)
        extra = {name: payload.pop(name) for name in ("top_k",) if name in payload}  # not an OpenAI parameter
        resource = self._client.completions if endpoint == COMPLETIONS else self._client.chat.completions
        raw = resource.with_raw_response.create(**payload, timeout=timeout, **({"extra_body": extra} if extra else {}))
        return raw.http_response

    def _after_status(self, error, request: str, tries: int) -> tuple[str, float | None]:
        """The line for an error status, and how long to wait before asking again (None: not again)."""
        status = error.status_code
        line = status_line(self.base_url, request, status, reason(error.response, self._key), tries,
                           keyed=self._key is not None, model=self.served_model)
        if not retried(status):
            return masked(line, self._key), None
        asked_for = retry_after(error.response.headers)
        if asked_for is not None and asked_for > self._timeout:
            return masked(f"{line}; it asks to be asked again in {asked_for:g} s (Retry-After), longer than seedscope "
                          f"waits (request_timeout, {self._timeout:g} s), so it was not: try again later", self._key), None
        return masked(line, self._key), _backoff(tries) if asked_for is None else asked_for

    def _checked(self, response, endpoint: str, payload: dict, request: str, fewer_choices: bool) -> Answer:
        body = masked_bytes(response.content, self._key)
        try:
            answer = parse_answer(body, endpoint, payload, fewer_choices=fewer_choices)
        except BadAnswer as bad:
            raise SeedscopeError(masked(f"the server at {self.base_url} gave a bad answer to {request}: {bad}; its body "
                                        f"began {excerpt(body)}", self._key)) from None
        answer.raw_size = len(response.content)
        if response.history:  # where the base URL led: the final URL less the endpoint's path
            moved = str(response.url.copy_with(query=None)).removesuffix("/completions").removesuffix("/chat")
            with self._lock:
                self.redirected.add(masked(moved, self._key))
        return answer

    def close(self) -> None:
        self._stopping.set()
        self._traffic.close()
        self._client.close()
        if self._cache is not None:
            self._cache.close()


def _backoff(tries: int) -> float:
    """The ``openai`` client's backoff: 0.5 s doubled each try, at most 8 s, less up to a quarter at random."""
    return min(0.5 * 2 ** (tries - 1), 8.0) * (1 - 0.25 * random.random())


class _Traffic:
    """The requests in flight and the retries so far, said every second while any has waited a while."""

    def __init__(self, where: str, timeout: float, budget: float | None):
        self.where, self.timeout, self.budget = where, timeout, budget
        self.started: dict[int, float] = {}
        self.retries = 0
        self.last = ""
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._ticker: threading.Thread | None = None
        self._said = False

    @contextmanager
    def waiting(self):
        """Inside, this thread's request is in flight (the ticker starts with the first one)."""
        with self._lock:
            self.started[threading.get_ident()] = time.monotonic()
            if self._ticker is None:
                self._ticker = threading.Thread(target=self._tick, daemon=True)
                self._ticker.start()
        try:
            yield
        finally:
            with self._lock:
                self.started.pop(threading.get_ident(), None)

    def retrying(self, why: str, pause: float) -> None:
        with self._lock:
            self.retries += 1
            self.last = f"{why}; again in {pause:.0f} s" if pause >= 1 else why

    def text(self) -> str | None:
        with self._lock:
            if not self.started:
                return None
            oldest = time.monotonic() - min(self.started.values())
            if oldest < SAID_AFTER_SECONDS and not self.retries:
                return None
            if self.budget is not None:
                said = (f"waiting for the server at {self.where} to answer the study's first request: {oldest:.0f} s "
                        f"(it gives up after {self.budget:g} s)")
            else:
                said = (f"{len(self.started)} request(s) in flight at {self.where}, the oldest for {oldest:.0f} s "
                        f"(up to {self.timeout:g} s a try)")
            return said + (f"; {self.retries} retried so far (last: {self.last})" if self.retries else "")

    def _tick(self) -> None:
        while not self._closed.wait(1.0):
            text = self.text()
            if text is not None or self._said:
                say_status(text)
                self._said = text is not None

    def close(self) -> None:
        self._closed.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)  # its last word comes before the one that clears the status
        if self._said:
            say_status(None)
