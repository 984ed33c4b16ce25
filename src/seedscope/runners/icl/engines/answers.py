"""The one parser of a server's answers: nothing a server says is used, cached or stored before it is checked.

Every answer — fresh from the server, or read back from the response cache on ``--resume`` —
goes through :func:`parse_answer`. It checks the shape (JSON, an object, ``choices`` a non-empty
list of objects, each text a string) and what scoring and sampling rest on: log-probabilities
finite numbers at most 0, one per token and text offset, offsets that never go back and stay
inside the text, the echo the prompt that was sent, as many choices as ``n`` asked. What comes
out keeps only the fields seedscope reads (:meth:`Answer.cached`), with the body's size in
bytes. A bad answer is a :class:`BadAnswer` saying what is wrong; the client adds the server,
the request and an excerpt of the body (:mod:`.client`).
"""

from __future__ import annotations

import json
import math
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, StrictFloat, StrictInt, StrictStr, ValidationError

from seedscope.errors import SeedscopeError

#: the two endpoints asked: legacy text completions and chat completions
COMPLETIONS, CHAT = "completions", "chat"
#: characters a token may hold at most, for the note on an answer far longer than ``max_tokens`` allows (the longest
#: tokens of common vocabularies — runs of spaces or dashes — are a few dozen)
LONGEST_TOKEN_CHARS = 64


class BadAnswer(SeedscopeError):
    """An answer that failed a check: what is wrong with it, in words."""


class _Read(BaseModel):
    """Only the fields seedscope reads are kept; every other field of an answer is dropped as it is read."""

    model_config = ConfigDict(extra="ignore")


class Logprobs(_Read):
    """A completion's log-probabilities, as the legacy completions endpoint gives them."""

    tokens: list[StrictStr] | None = None
    token_logprobs: list[StrictFloat | None]
    text_offset: list[StrictInt]


class Message(_Read):
    content: StrictStr | None = None


class Choice(_Read):
    index: StrictInt | None = None
    text: StrictStr | None = None  # completions
    message: Message | None = None  # chat
    finish_reason: StrictStr | None = None
    logprobs: Logprobs | None = None

    @property
    def content(self) -> str:
        """The choice's text: a completion's ``text``, a chat answer's ``message.content`` (checked to be a string)."""
        return self.text if self.text is not None else self.message.content  # type: ignore[union-attr]


class Answer(_Read):
    """A checked answer: its model id and fingerprint, its choices in index order, and the body's size in bytes."""

    model: StrictStr | None = None
    system_fingerprint: StrictStr | None = None
    choices: list[Choice]
    raw_size: StrictInt | None = None  # seedscope's own: the size of the body as it came

    def texts(self) -> list[str]:
        return [choice.content for choice in self.choices]

    def cached(self) -> str:
        """What the response cache keeps: the fields read, as JSON."""
        return self.model_dump_json(exclude_none=True)


def parse_answer(body: bytes | str, endpoint: str, payload: dict[str, Any], *, fewer_choices: bool = False,
                 fresh: bool = True) -> Answer:
    """The answer in ``body`` to ``payload`` sent to ``endpoint``, checked; a :class:`BadAnswer` where it fails a check.

    ``fewer_choices``: from 1 to ``n`` choices pass (the request that finds out whether the server honours ``n``).
    A ``fresh`` answer (from the server) gets the body's size as its ``raw_size``; a cached one keeps the size it had.
    """
    text = body.decode("utf-8", errors="replace") if isinstance(body, bytes) else body
    data = _json(text)
    if fresh:
        data.pop("raw_size", None)
    answer = _shaped(data, payload)
    if fresh:
        answer.raw_size = len(body) if isinstance(body, bytes) else len(body.encode())
    _check(answer, endpoint, payload, fewer_choices)
    answer.choices.sort(key=lambda choice: choice.index or 0)
    return answer


def checked_logprobs(values: Sequence[float | None], what: str = "log-probability") -> None:
    """Each value None (no log-probability: the first token) or a finite number at most 0, else a :class:`BadAnswer`.

    Shared by every engine that reads log-probabilities it did not compute itself (the openai and vllm engines)."""
    for position, value in enumerate(values):
        if value is None:
            continue
        if math.isnan(value):
            raise BadAnswer(f"{what} {position} is NaN")
        if math.isinf(value):
            raise BadAnswer(f"{what} {position} is {'-' if value < 0 else '+'}Infinity, not a finite number")
        if value > 0:
            raise BadAnswer(f"{what} {position} is positive ({value:g}); a log-probability is at most 0")


def _json(text: str) -> dict:
    if not text.strip():
        raise BadAnswer("its body is empty")
    try:
        data = json.loads(text)
    except ValueError as error:
        if text.lstrip()[:1] == "<":
            raise BadAnswer("its body is an HTML page, not JSON (a proxy's or a gateway's page?)") from None
        raise BadAnswer(f"its body is not JSON ({str(error).split(':')[0]} at character {getattr(error, 'pos', 0)})") from None
    if not isinstance(data, dict):
        kind = "null" if data is None else f"a JSON {type(data).__name__.replace('str', 'string')}"
        raise BadAnswer(f"its body is {kind}, not an object")
    return data


def _shaped(data: dict, payload: dict) -> Answer:
    """The fields read, of the types they must have (log-probabilities only where they were asked for)."""
    error = data.get("error")
    if error and not data.get("choices"):
        message = error.get("message") or error.get("detail") or error if isinstance(error, dict) else error
        raise BadAnswer(f"it holds an error instead of an answer: {' '.join(str(message).split())[:300]}")
    if isinstance(data.get("choices"), list) and payload.get("logprobs") is None:
        data = {**data, "choices": [{k: v for k, v in c.items() if k != "logprobs"} if isinstance(c, dict) else c
                                    for c in data["choices"]]}
    try:
        return Answer.model_validate(data)
    except ValidationError as invalid:
        raise BadAnswer(_shape_error(invalid.errors()[0])) from None


def _shape_error(error: dict) -> str:
    where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in error["loc"]).lstrip(".")
    kinds = {"string_type": "a string", "float_type": "a number", "int_type": "an integer", "list_type": "a list",
             "model_type": "an object", "model_attributes_type": "an object", "dict_type": "an object"}
    if error["type"] == "missing":
        return f"it has no {where}"
    if error["type"] in kinds:
        return f"its field {where} is {_shown(error.get('input'))}, not {kinds[error['type']]}"
    return f"its field {where}: {error['msg'][0].lower()}{error['msg'][1:]}"


def _shown(value: Any) -> str:
    text = "null" if value is None else json.dumps(value) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _check(answer: Answer, endpoint: str, payload: dict, fewer_choices: bool) -> None:
    asked = int(payload.get("n") or 1)
    count = len(answer.choices)
    if count == 0:
        raise BadAnswer("its choices are an empty list")
    if count > asked or (count < asked and not fewer_choices):
        raise BadAnswer(f"it holds {count} choice(s) where n={asked} was asked")
    indexes = [choice.index for choice in answer.choices if choice.index is not None]
    if len(set(indexes)) < len(indexes):
        raise BadAnswer(f"two of its choices have the same index ({sorted(indexes)})")
    for number, choice in enumerate(answer.choices):
        if endpoint == CHAT and (choice.message is None or choice.message.content is None):
            raise BadAnswer(f"its choices[{number}] has no message content (null or missing)")
        if endpoint != CHAT and choice.text is None:
            raise BadAnswer(f"its choices[{number}] has no text (null or missing)")
        if payload.get("logprobs") is not None and choice.logprobs is not None:  # what scoring reads: offsets into
            if payload.get("echo") and not choice.content.startswith(payload.get("prompt", "")):  # the echoed prompt
                raise BadAnswer(f"its echo is not the prompt sent ({_difference(choice.content, payload['prompt'])})")
            _check_logprobs(choice.logprobs, choice.content)


def _check_logprobs(logprobs: Logprobs, text: str) -> None:
    values, offsets = logprobs.token_logprobs, logprobs.text_offset
    if logprobs.tokens is not None and len(values) != len(logprobs.tokens):
        raise BadAnswer(f"it holds {len(values)} log-probabilities for {len(logprobs.tokens)} tokens")
    if len(values) != len(offsets):
        raise BadAnswer(f"it holds {len(values)} log-probabilities for {len(offsets)} text offsets")
    checked_logprobs(values, "its log-probability of token")
    for position in range(1, len(offsets)):
        if offsets[position] < offsets[position - 1]:
            raise BadAnswer(f"its text offsets go back, from {offsets[position - 1]} to {offsets[position]} at token "
                            f"{position}")
    outside = [offset for offset in offsets if not 0 <= offset <= len(text)]
    if outside:
        raise BadAnswer(f"its text offset {outside[0]} lies outside the {len(text)} characters of the text")


def _difference(echoed: str, prompt: str) -> str:
    at = next((i for i, (a, b) in enumerate(zip(echoed, prompt)) if a != b), min(len(echoed), len(prompt)))
    return f"they differ from character {at}: {echoed[at: at + 20]!r} where the prompt has {prompt[at: at + 20]!r}"


def generated_text(choice: Choice, payload: dict) -> str:
    """What the server generated in ``choice`` (an echoed prompt left out)."""
    return choice.content[len(payload.get("prompt", "")):] if payload.get("echo") else choice.content


def far_too_long(answer: Answer, payload: dict) -> bool:
    """Some choice holds more characters than ``max_tokens`` tokens can (the server did not stop at max_tokens)."""
    limit = LONGEST_TOKEN_CHARS * int(payload.get("max_tokens") or 0)
    return bool(limit) and any(len(generated_text(choice, payload)) > limit for choice in answer.choices)
