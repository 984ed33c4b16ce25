"""An OpenAI-compatible server on localhost that misbehaves on cue, for the engine tests and the faults campaign.

It answers as a server that behaves (completions with echoed log-probabilities, chat, ``n`` and ``seed``
honoured; deterministic answers) until told otherwise: every bad shape, status and transport failure the openai
engine must turn into one line (:data:`SHAPES`, :data:`STATUSES`, :data:`TRANSPORTS`), and answers it must say
something about (:data:`NOTED`). :data:`SAID` holds the words each failure's line must hold.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import socket
import struct
import threading
from http.server import BaseHTTPRequestHandler

from seedscope.runners.icl.engines.local_server import free_port

from .servers import QuietServer

#: what FaultyServer can be told to do instead of answering well (``cue``): a bad shape with status 200, a status, a
#: transport failure, or a good answer the client must say something about
SHAPES = ("not_json", "empty", "html", "null", "list", "no_choices", "empty_choices", "choice_not_object",
          "text_not_string", "text_none", "logprobs_strings", "nan", "infinity", "minus_infinity", "positive",
          "short_logprobs", "offsets_back", "offset_outside", "echo_differs", "fewer_choices", "more_choices",
          "error_200")
STATUSES = ("401", "403", "404", "400", "422", "429", "500", "502", "503", "retry_after_long")
TRANSPORTS = ("hang", "reset", "cut", "close", "redirect_loop")
NOTED = ("finish_length", "long_text", "other_model", "redirect", "huge", "key_in_body", "key_in_header", "slow")
#: what the line of each failure must say (after "the server at URL "), the same before the run and during it
SAID = {
    "not_json": "gave a bad answer to a completions request", "empty": "its body is empty",
    "html": "its body is an HTML page, not JSON", "null": "its body is null, not an object",
    "list": "its body is a JSON list, not an object", "no_choices": "it has no choices",
    "empty_choices": "its choices are an empty list", "choice_not_object": "its field choices[0] is 'positive', not an object",
    "text_not_string": "its field choices[0].text is 5, not a string", "text_none": "its choices[0] has no text",
    "logprobs_strings": "token_logprobs[1] is", "nan": "is NaN", "infinity": "is +Infinity, not a finite number",
    "minus_infinity": "is -Infinity, not a finite number", "positive": "a log-probability is at most 0",
    "short_logprobs": "log-probabilities for", "offsets_back": "its text offsets go back",
    "offset_outside": "lies outside the", "echo_differs": "its echo is not the prompt sent",
    "fewer_choices": "its choices are an empty list", "more_choices": "it holds 2 choice(s) where n=1 was asked",
    "error_200": "it holds an error instead of an answer: the model is overloaded",
    "401": "refused the API key (401): Incorrect API key provided: ***.",
    "403": "refused the API key (403): the key *** may not use this model",
    "404": "has no model 'faulty-model' or no such route (404)", "400": "(400): max_tokens is too large for key ***",
    "422": "(422): prompt: field required", "429": "answered 429 to a completions request",
    "500": "answered 500 to a completions request", "502": "answered 502", "503": "answered 503",
    "retry_after_long": "asks to be asked again in 100000 s (Retry-After)",
    "hang": "did not answer within", "reset": "reset the connection",
    "cut": "cut its answer short", "close": "closed the connection without answering",
    "redirect_loop": "redirects in a loop",
}
#: the words of a sampled or greedy answer (the first is a label word of SST-2's minimal format)
WORDS = (" positive", " negative", " great", " terrible", " fine", " the")


def _digest(*parts) -> int:
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


def _logprob(*parts) -> float:
    """A log-probability in [-5.1, -0.1], the same for the same parts."""
    return -(0.1 + _digest(*parts) % 1000 / 200)


class FaultyServer:
    """An OpenAI-compatible server on a localhost port that answers well (completions with echoed log-probabilities,
    chat, ``n`` and ``seed`` honoured) until ``cue(fault, start, count)`` tells it to misbehave on the requests
    numbered ``start`` to ``start + count - 1`` (every later one without ``count``); ``fix()`` makes it behave again.

    With ``key`` it wants ``Authorization: Bearer KEY`` and quotes whatever key it was sent in its 401, as some
    gateways do; its other error bodies quote the sent key too, so that a test can look for it everywhere.
    """

    def __init__(self, key: str | None = None, slow_seconds: float = 3.0):
        self.key = key
        self.slow_seconds = slow_seconds
        self.port = free_port()
        self.requests = 0  # POSTs received, numbered from 0
        self.answered = 0  # good answers sent
        self._faults: list[tuple[str, int, int | None]] = []
        self._lock = threading.Lock()
        self._closing = threading.Event()
        self._stopped = True
        self._server: QuietServer | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def cue(self, fault: str, start: int = 0, count: int | None = None) -> "FaultyServer":
        if fault not in SHAPES + STATUSES + TRANSPORTS + NOTED:
            raise ValueError(f"unknown fault {fault!r}")
        self._faults.append((fault, start, count))
        return self

    def fix(self) -> "FaultyServer":
        self._faults.clear()
        return self

    def fault_of(self, number: int) -> str | None:
        for fault, start, count in self._faults:
            if number >= start and (count is None or number < start + count):
                return fault
        return None

    def start(self) -> "FaultyServer":
        self._closing.clear()
        self._stopped = False
        self._server = QuietServer(("127.0.0.1", self.port), _handler(self))
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        """Stop listening and drop every open connection unanswered, as a killed server does."""
        self._stopped = True
        self._closing.set()  # a hanging answer ends
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "FaultyServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # the answers of a server that behaves
    def completion(self, payload: dict, number: int) -> dict:
        prompt, n = payload.get("prompt", ""), int(payload.get("n") or 1)
        choices = []
        for index in range(n):
            words = self._words(prompt, payload, index)
            text = (prompt if payload.get("echo") else "") + "".join(words)
            choice = {"index": index, "text": text, "finish_reason": "stop" if len(words) < payload["max_tokens"]
                      else "length", "logprobs": None}
            if payload.get("logprobs") is not None:
                tokens = (re.findall(r"\s*\S+|\s+", prompt) if payload.get("echo") else []) + words
                offsets = list(itertools.accumulate([0] + [len(token) for token in tokens[:-1]]))
                values = [None if payload.get("echo") and i == 0 else _logprob(text[:offset], token)
                          for i, (offset, token) in enumerate(zip(offsets, tokens))]
                choice["logprobs"] = {"tokens": tokens, "token_logprobs": values, "text_offset": offsets,
                                      "top_logprobs": None}
            choices.append(choice)
        return self._envelope("text_completion", payload, choices)

    def chat(self, payload: dict, number: int) -> dict:
        prompt = json.dumps(payload.get("messages"))
        choices = [{"index": index, "message": {"role": "assistant", "content": "".join(self._words(prompt, payload, index)).strip()},
                    "finish_reason": "stop", "logprobs": None} for index in range(int(payload.get("n") or 1))]
        return self._envelope("chat.completion", payload, choices)

    def _words(self, prompt: str, payload: dict, index: int) -> list[str]:
        """One or two words (fewer than max_tokens, so the answer stops), the same for the same prompt, seed and draw."""
        sampled = (payload.get("temperature") or 0) > 0
        draw = _digest(prompt, payload.get("seed"), index) if sampled else _digest(prompt)
        return [WORDS[draw % 2], WORDS[2 + draw // 2 % 4]][: min(2, payload.get("max_tokens") or 16)]

    def _envelope(self, kind: str, payload: dict, choices: list[dict]) -> dict:
        return {"id": "cmpl-faulty", "object": kind, "created": 0, "model": payload.get("model"),
                "system_fingerprint": "faulty-1", "choices": choices,
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}


def _misshapen(fault: str, answer: dict, payload: dict) -> bytes | None:
    """The body of a bad answer with status 200 (None: the fault is not one of these)."""
    whole = {"not_json": b'{"choices": [{"text": "', "empty": b"", "null": b"null", "list": b"[1,2,3]",
             "html": b"<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body>nginx</body></html>"}
    if fault in whole:
        return whole[fault]
    first = answer["choices"][0]
    logprobs = first.get("logprobs") or {}
    values = logprobs.get("token_logprobs") or []
    if fault == "no_choices":
        answer.pop("choices")
    elif fault == "empty_choices":
        answer["choices"] = []
    elif fault == "choice_not_object":
        answer["choices"] = ["positive"]
    elif fault in ("text_not_string", "text_none"):
        value = 5 if fault == "text_not_string" else None
        if "message" in first:
            first["message"]["content"] = value
        else:
            first["text"] = value
    elif fault == "logprobs_strings" and values:
        logprobs["token_logprobs"] = [None if v is None else ("-inf" if i == len(values) - 1 else str(v))
                                      for i, v in enumerate(values)]
    elif fault in ("nan", "infinity", "minus_infinity") and values:
        values[-2] = {"nan": math.nan, "infinity": math.inf, "minus_infinity": -math.inf}[fault]
    elif fault == "positive" and values:
        logprobs["token_logprobs"] = [None if v is None else 2.5 + i % 6 for i, v in enumerate(values)]
    elif fault == "short_logprobs" and values:
        values.pop()
    elif fault == "offsets_back" and values:
        offsets = logprobs["text_offset"]
        offsets[-2], offsets[-3] = offsets[-3], offsets[-2]
    elif fault == "offset_outside" and values:
        logprobs["text_offset"][-1] = len(first["text"]) + 40
    elif fault == "echo_differs" and payload.get("echo"):
        first["text"] = "Review:" + first["text"][len("Review:"):].replace("e", "E", 3)
    elif fault == "fewer_choices":
        answer["choices"] = answer["choices"][:-1] if len(answer["choices"]) > 1 else []
    elif fault == "more_choices":
        answer["choices"].append({**first, "index": len(answer["choices"])})
    elif fault == "error_200":
        return json.dumps({"error": {"message": "the model is overloaded, try again later", "type": "server_error",
                                     "code": None}}).encode()
    else:  # the request does not have what the fault spoils (no log-probabilities asked): a good answer
        return None
    return json.dumps(answer).encode()


def _handler(server: FaultyServer):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def do_GET(self):
            if self.path.rstrip("/").endswith("/models"):
                return self._send(200, json.dumps({"object": "list", "data": [{"id": "faulty-model", "object": "model"}]}).encode())
            self._send(200 if self.path == "/health" else 404, b"{}")

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if server._stopped:  # a connection kept open from before the server was stopped
                self.connection.shutdown(socket.SHUT_RDWR)
                self.close_connection = True
                return
            with server._lock:
                number, server.requests = server.requests, server.requests + 1
            sent_key = self.headers.get("authorization", "").removeprefix("Bearer ")
            if server.key is not None and sent_key != server.key:
                return self._error(401, f"Incorrect API key provided: {sent_key}.", sent_key)
            fault = server.fault_of(number)
            if self.path.startswith("/moved/"):
                self.path, fault = self.path.removeprefix("/moved"), None
            if self._transport(fault, sent_key) or self._status(fault, sent_key):
                return
            payload = json.loads(body)
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                return self._error(404, f"no route {self.path}", sent_key)
            answer = server.chat(payload, number) if self.path.endswith("chat/completions") else server.completion(payload, number)
            data = _misshapen(fault, answer, payload) if fault in SHAPES else None
            if data is None:
                data = json.dumps(self._noted(fault, answer, sent_key)).encode()
                server.answered += 1
            headers = {"x-request-key": sent_key} if fault == "key_in_header" else {}
            if fault == "slow":
                server._closing.wait(server.slow_seconds)
            self._send(200, data, "text/html" if fault == "html" else "application/json", headers)

        def _noted(self, fault: str | None, answer: dict, sent_key: str) -> dict:
            first = answer["choices"][0]
            if fault == "finish_length":
                first["finish_reason"] = "length"
            elif fault == "long_text" and "text" in first:
                first["text"] += " positive" * 66_667
            elif fault == "other_model":
                answer["model"] = "someone-elses-model"
            elif fault == "huge":
                answer["debug"] = "x" * 2_000_000
            elif fault == "key_in_body" and "text" in first:
                answer["debug"] = f"served for {sent_key}"
            return answer

        def _transport(self, fault: str | None, sent_key: str) -> bool:
            if fault == "hang":
                server._closing.wait(300)
            elif fault == "reset":
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                self.connection.close()
            elif fault == "cut":
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", "4000")
                self.end_headers()
                self.wfile.write(b'{"id": "cmpl-cut", "choices": [{"te')
                self.wfile.flush()
                self.connection.shutdown(socket.SHUT_RDWR)
            elif fault == "close":
                self.connection.shutdown(socket.SHUT_RDWR)
            elif fault in ("redirect_loop", "redirect"):
                target = self.path if fault == "redirect_loop" else "/moved" + self.path
                self._send(307, b"", headers={"location": f"http://127.0.0.1:{server.port}{target}"})
                return True  # the connection stays open for the request redirected
            else:
                return False
            self.close_connection = True
            return True

        def _status(self, fault: str | None, sent_key: str) -> bool:
            if fault not in STATUSES:
                return False
            status = 503 if fault == "retry_after_long" else int(fault)
            reasons = {401: f"Incorrect API key provided: {sent_key}.", 403: f"the key {sent_key} may not use this model",
                       404: "The model `faulty` does not exist", 400: f"max_tokens is too large for key {sent_key}",
                       422: "prompt: field required", 429: "Rate limit reached, retry later",
                       500: f"internal error while serving {sent_key}", 502: "bad gateway", 503: "overloaded"}
            self._error(status, reasons[status], sent_key,
                        {"retry-after": "100000"} if fault == "retry_after_long" else {"retry-after-ms": "10"})
            return True

        def _error(self, status: int, message: str, sent_key: str, headers: dict | None = None) -> None:
            body = json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": status}}).encode()
            self._send(status, body, headers={"x-echoed-key": sent_key, **(headers or {})})

        def _send(self, status: int, data: bytes, kind: str = "application/json", headers: dict | None = None) -> None:
            self.send_response(status)
            self.send_header("content-type", kind)
            self.send_header("content-length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler
