"""Asking an OpenAI-compatible server: the ``openai`` client, the response cache, concurrency, clear errors.

The ``openai`` package does what every such client must: a timeout per request, and retries
with exponential backoff (honouring ``Retry-After``) of 408, 409, 429, 5xx answers and lost
connections. This module adds what a seed study needs: requests in flight ``concurrency`` at a
time, each response cached in the store the moment it arrives (:mod:`seedscope.store.responses`), the served
model ids and ``system_fingerprint`` s seen, and one sentence for each way a server can fail —
never a traceback. The API key is read from the environment variable the run names, and is
neither stored nor printed.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from typing import Any, Sequence

from seedscope.errors import SeedscopeError
from seedscope.store.responses import ResponseCache, request_key
from seedscope.runners.result import StepHook

#: the two endpoints asked: legacy text completions and chat completions
COMPLETIONS, CHAT = "completions", "chat"


def api_key(variable: str | None) -> str:
    """The key in ``variable`` (a local server needs none: a placeholder then), or a one-line error."""
    if variable is None:
        return "none"
    key = os.environ.get(variable)
    if not key:
        raise SeedscopeError(f"the API key variable {variable} (api_key_env) is not set in this environment; "
                             f"export {variable}=… or leave api_key_env out for a server that needs no key")
    return key


class ServerClient:
    """One run's connection to the server at ``base_url``, serving ``served_model``."""

    def __init__(self, settings, served_model: str):
        import openai

        self.base_url = settings.base_url
        self.served_model = served_model
        self.concurrency = settings.concurrency
        self.rerun = settings.rerun
        self._client = openai.OpenAI(base_url=settings.base_url, api_key=api_key(settings.api_key_env),
                                     timeout=settings.request_timeout, max_retries=settings.max_retries)
        self._retries = settings.max_retries
        self._timeout = settings.request_timeout
        self._cache = ResponseCache.of_sweep()
        self._lock = threading.Lock()
        self.asked = 0
        self.cached = 0
        self.served: set[str] = set()
        self.fingerprints: set[str] = set()

    def ask(self, endpoint: str, payload: dict[str, Any]) -> dict:
        """The server's response to one request (from the cache when it was answered before), as a dict."""
        payload = {"model": self.served_model, **payload}
        key = request_key(self.base_url, endpoint, payload, self.rerun)
        response = self._cache.get(key) if self._cache is not None else None
        if response is None:
            response = self._request(endpoint, payload)
            if self._cache is not None:
                self._cache.put(key, response)
            counter = "asked"
        else:
            counter = "cached"
        with self._lock:
            setattr(self, counter, getattr(self, counter) + 1)
            self.served.add(str(response.get("model")))
            if response.get("system_fingerprint"):
                self.fingerprints.add(response["system_fingerprint"])
        return response

    def ask_all(self, requests: Sequence[tuple[str, dict]], on_step: StepHook | None = None) -> list[dict]:
        """Every (endpoint, payload) asked, ``concurrency`` at a time, answers in the requests' order."""
        answers: list[dict | None] = [None] * len(requests)
        done = 0
        stop = threading.Event()  # set by the first failure (or Ctrl-C): no request is started after it

        def one(index: int) -> None:
            nonlocal done
            if stop.is_set():
                return
            try:
                answers[index] = self.ask(*requests[index])
            except BaseException:
                stop.set()
                raise
            with self._lock:
                done += 1
                finished = done
            if on_step is not None:
                on_step(finished, len(requests))

        pool = ThreadPoolExecutor(self.concurrency)
        try:
            futures = [pool.submit(one, i) for i in range(len(requests))]
            done_now, _ = wait(futures, return_when=FIRST_EXCEPTION)
            for future in done_now:
                future.result()  # the first failure ends the run (the answers so far are cached)
        finally:  # a failure or Ctrl-C asks nothing more: the requests not started are dropped
            stop.set()
            pool.shutdown(wait=False, cancel_futures=True)
        return answers  # type: ignore[return-value]

    def _request(self, endpoint: str, payload: dict[str, Any]) -> dict:
        import openai

        payload = dict(payload)
        extra = {name: payload.pop(name) for name in ("top_k",) if name in payload}  # not an OpenAI parameter
        create = self._client.completions.create if endpoint == COMPLETIONS else self._client.chat.completions.create
        try:
            return create(**payload, **({"extra_body": extra} if extra else {})).model_dump()
        except openai.APITimeoutError:
            raise SeedscopeError(f"the server at {self.base_url} did not answer within request_timeout "
                                 f"({self._timeout:g} s), asked {self._retries + 1} time(s); raise request_timeout or "
                                 "lower concurrency") from None
        except openai.APIConnectionError:
            raise SeedscopeError(f"no server answers at {self.base_url} (is it running, and is the URL right?)") from None
        except openai.AuthenticationError as error:
            raise SeedscopeError(f"the server at {self.base_url} refused the API key: {_detail(error)}") from None
        except openai.APIStatusError as error:
            raise SeedscopeError(_status_text(self.base_url, endpoint, error, self._retries)) from None

    def close(self) -> None:
        self._client.close()
        if self._cache is not None:
            self._cache.close()


def _detail(error) -> str:
    """The server's own reason, on one line."""
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        body = body.get("message") or body.get("detail") or body.get("error") or body
        if isinstance(body, dict):
            body = body.get("message", body)
    text = " ".join(str(body or getattr(error, "message", "") or error).split())
    return text[:300]


def _status_text(base_url: str, endpoint: str, error, retries: int) -> str:
    status = error.status_code
    if status == 429 or status >= 500:
        return (f"the server at {base_url} answered {status} to a {endpoint} request, still after {retries} retries: "
                f"{_detail(error)}")
    return f"the server at {base_url} refused a {endpoint} request ({status}): {_detail(error)}"
