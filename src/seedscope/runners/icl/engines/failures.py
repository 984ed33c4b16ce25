"""One line for each way a server fails, said as it is: status codes and transport errors each in their own words.

The words come from what the ``openai`` client raises — ``APIStatusError`` (with the
response), ``APIConnectionError`` and ``APITimeoutError`` with the transport's own error as
their cause (``ConnectError``, ``ReadError`` for a reset, ``RemoteProtocolError`` for a cut body
or a connection closed unanswered, ``TooManyRedirects``, ``UnsupportedProtocol``,
``ReadTimeout`` …). Those are told apart by their class names, which ``httpx`` (the transport of
older ``openai`` releases, such as the lowest one seedscope supports) and ``httpx2`` share. Every text a server sends is masked (:func:`masked`) before it goes into a
line, so that a key a gateway quotes back is never printed, logged or stored.
"""

from __future__ import annotations

import email.utils
import json
import re
import time

#: statuses worth asking again (as the ``openai`` client retries them): a request timeout, a conflict, a rate limit,
#: and any 5xx
RETRIED = (408, 409, 429)
#: what stands for a key in any text shown or kept
MASK = "***"


def masked(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` (the API key) replaced by :data:`MASK`."""
    return text.replace(secret, MASK) if secret else text


def masked_bytes(body: bytes, secret: str | None) -> bytes:
    return body.replace(secret.encode(), MASK.encode()) if secret else body


def excerpt(body: bytes | str, limit: int = 120) -> str:
    """The first characters of a body, on one line and quoted ("(empty)" for none)."""
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    text = " ".join(text.split())
    if not text:
        return "(empty)"
    return repr(text if len(text) <= limit else text[:limit] + "…")


def request_text(endpoint: str, payload: dict) -> str:
    """The request in a few words: its endpoint and the end of its prompt (where the examples differ)."""
    if "prompt" in payload:
        prompt = str(payload["prompt"])
        return f"a {endpoint} request (prompt ending {prompt[-48:]!r})"
    messages = payload.get("messages") or [{}]
    return f"a {endpoint} request (last turn ending {str(messages[-1].get('content', ''))[-48:]!r})"


def is_a(error: BaseException, *names: str) -> bool:
    """``error`` is of one of the transport's error classes ``names`` (or of a subclass), whichever httpx it is."""
    return any(kind.__name__ in names for kind in type(error).__mro__)


def reason(response, secret: str | None) -> str:
    """The server's own reason for an error answer, on one line: the JSON error's message, or the body's start."""
    try:
        text = masked(response.text, secret)
    except Exception:  # a body that cannot be read (a cut one): the status says enough
        return "(no readable body)"
    try:
        data = json.loads(text)
    except ValueError:
        title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        if text.lstrip()[:1] == "<":
            return f"an HTML page{f' titled {title.group(1).strip()!r}' if title else ''}"
        return excerpt(text, 300)
    if isinstance(data, dict):
        data = data.get("error", data)
        if isinstance(data, dict):
            data = data.get("message") or data.get("detail") or data.get("msg") or data
    found = " ".join(str(data).split())
    return found[:300] or "(an empty body)"


def retry_after(headers) -> float | None:
    """Seconds the server asks to wait before it is asked again (``retry-after-ms``, ``retry-after`` in seconds or as
    a date), or None."""
    if headers.get("retry-after-ms"):
        try:
            return float(headers["retry-after-ms"]) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        try:
            return max(0.0, email.utils.parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError, IndexError, OverflowError):
            return None


def retried(status: int) -> bool:
    return status in RETRIED or status >= 500


def status_line(where: str, request: str, status: int, why: str, tries: int, *, keyed: bool, model: str) -> str:
    """The line for an error status: the key refused, the model or route missing, the server's reason."""
    asked = f"asked {tries} time(s)"
    if status in (401, 403):
        if not keyed:
            return (f"the server at {where} wants an API key ({status}): {why}; name the environment variable holding "
                    "it with --api-key-env")
        return f"the server at {where} refused the API key ({status}): {why}"
    if status == 404:
        return (f"the server at {where} has no model {model!r} or no such route ({status}) for {request}: {why}; "
                "check --model (or served_model) and that the URL ends in /v1")
    if retried(status):
        return f"the server at {where} answered {status} to {request}, {asked}: {why}"
    return f"the server at {where} refused {request} ({status}): {why}"


def transport_line(where: str, error: BaseException, tries: int, timeout: float) -> str:
    """The line for a request that got no answer, from the transport's own error (the ``openai`` error's cause)."""
    cause = error.__cause__ or error
    said = " ".join(str(cause).split())
    asked = f"asked {tries} time(s)"
    if is_a(cause, "ConnectTimeout"):
        return f"the server at {where} could not be reached within {timeout:g} s (a connect timeout), {asked}"
    if is_a(cause, "TimeoutException"):
        return (f"the server at {where} took the request but did not answer within {timeout:g} s, {asked}; raise "
                "request_timeout (--set request_timeout=…) if it is slow, or lower concurrency")
    if is_a(cause, "ConnectError"):
        if re.search(r"name or service not known|nodename nor servname|getaddrinfo|name resolution", said, re.I):
            return f"no host of the URL {where} is known (the name does not resolve: {said}); check --base-url"
        return f"no server answers at {where} (is it running, and is the URL right?), {asked}"
    if is_a(cause, "RemoteProtocolError"):
        if "message body" in said:
            return f"the server at {where} cut its answer short: the connection closed before the body was whole, {asked} ({said})"
        return f"the server at {where} closed the connection without answering, {asked} ({said})"
    if is_a(cause, "ReadError"):
        return f"the server at {where} reset the connection before its answer was read, {asked} ({said})"
    if is_a(cause, "WriteError"):
        return f"the server at {where} reset the connection while the request was sent, {asked} ({said})"
    if is_a(cause, "TooManyRedirects"):
        return f"the server at {where} redirects in a loop ({said}); give --base-url the server's own URL"
    if is_a(cause, "UnsupportedProtocol", "InvalidURL"):
        return f"the base URL {where} is malformed ({said}); give one such as http://localhost:8000/v1"
    if is_a(cause, "DecodingError"):
        return f"the server at {where} sent a body that cannot be decoded ({said}), {asked}"
    return f"the connection to the server at {where} failed, {asked}: {type(cause).__name__}: {said}"


def asked_again(cause: BaseException) -> bool:
    """A transport failure worth a retry: a refused or reset connection, a cut answer, a timeout (not a malformed URL
    or a redirect loop, which fail the same way every time)."""
    return is_a(cause, "TimeoutException", "NetworkError", "RemoteProtocolError")


def short_cause(error: BaseException) -> str:
    """A transport failure in two words, for the status line."""
    cause = error.__cause__ or error
    for kind, words in (("TimeoutException", "a timeout"), ("ConnectError", "connection refused"),
                        ("ReadError", "connection reset"), ("RemoteProtocolError", "connection closed")):
        if is_a(cause, kind):
            return words
    return type(cause).__name__
