"""The one parser of a server's answers, on every bad shape a server was seen to send (each refused in its own words)
and on good answers (vLLM's own, and a behaving server's): only the fields read are kept, with the body's size."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from seedscope.runners.icl.engines.answers import (
    CHAT,
    COMPLETIONS,
    BadAnswer,
    checked_logprobs,
    far_too_long,
    parse_answer,
)
from seedscope.runners.icl.engines.server import scoring_payload
from seedscope.runners.icl.engines.vllm import answer_logprobs

from ....faulty_server import SHAPES, FaultyServer, _misshapen

RESPONSES = Path(__file__).parent / "fixtures" / "vllm-server"
PROMPT = "Review: a gorgeous, witty film.\nSentiment: positive"
SCORING = scoring_payload("Review: a gorgeous, witty film.\nSentiment:", " positive")
SAMPLING = {"prompt": "Review: fine.\nSentiment:", "max_tokens": 5, "n": 3, "seed": 7, "temperature": 1.0}
CHATTING = {"messages": [{"role": "user", "content": "Review: fine. Sentiment?"}], "max_tokens": 5, "temperature": 0}

#: each bad shape (tests/servers.py makes it from a good answer) → the request it spoils and the words that name it
SAID = {
    "not_json": (SCORING, r"^its body is not JSON \(Unterminated string starting at at character 22\)$"),
    "empty": (SCORING, "^its body is empty$"),
    "html": (SCORING, r"^its body is an HTML page, not JSON \(a proxy's or a gateway's page\?\)$"),
    "null": (SCORING, "^its body is null, not an object$"),
    "list": (SCORING, "^its body is a JSON list, not an object$"),
    "no_choices": (SCORING, "^it has no choices$"),
    "empty_choices": (SCORING, "^its choices are an empty list$"),
    "choice_not_object": (SCORING, r"^its field choices\[0\] is 'positive', not an object$"),
    "text_not_string": (SCORING, r"^its field choices\[0\]\.text is 5, not a string$"),
    "text_none": (SCORING, r"^its choices\[0\] has no text \(null or missing\)$"),
    "logprobs_strings": (SCORING, r"^its field choices\[0\]\.logprobs\.token_logprobs\[1\] is '-\d\.\d+', not a number$"),
    "nan": (SCORING, r"^its log-probability of token 6 is NaN$"),
    "infinity": (SCORING, r"^its log-probability of token 6 is \+Infinity, not a finite number$"),
    "minus_infinity": (SCORING, r"^its log-probability of token 6 is -Infinity, not a finite number$"),
    "positive": (SCORING, r"^its log-probability of token 1 is positive \(3\.5\); a log-probability is at most 0$"),
    "short_logprobs": (SCORING, "^it holds 7 log-probabilities for 8 tokens$"),
    "offsets_back": (SCORING, "^its text offsets go back, from 42 to 31 at token 6$"),
    "offset_outside": (SCORING, r"^its text offset \d+ lies outside the \d+ characters of the text$"),
    "echo_differs": (SCORING, r"^its echo is not the prompt sent \(they differ from character 14: 'Eous, witty"),
    "fewer_choices": (SAMPLING, r"^it holds 2 choice\(s\) where n=3 was asked$"),
    "more_choices": (SCORING, r"^it holds 2 choice\(s\) where n=1 was asked$"),
    "error_200": (SCORING, "^it holds an error instead of an answer: the model is overloaded, try again later$"),
}


def _good(payload: dict, endpoint: str = COMPLETIONS) -> dict:
    server = FaultyServer()
    return server.chat(payload, 0) if endpoint == CHAT else server.completion({"model": "m", **payload}, 0)


def test_every_bad_shape_is_tested():
    assert set(SAID) == set(SHAPES)


@pytest.mark.parametrize("shape", sorted(SAID))
def test_a_bad_shape_is_refused_in_its_own_words(shape):
    payload, words = SAID[shape]
    body = _misshapen(shape, _good(payload), payload)
    assert body is not None
    with pytest.raises(BadAnswer, match=words):
        parse_answer(body, COMPLETIONS, payload)


def test_a_choice_of_a_chat_answer_without_content_is_refused():
    answer = _good(CHATTING, CHAT)
    assert parse_answer(json.dumps(answer), CHAT, CHATTING).texts()[0] in ("positive great", "negative great",
                                                                          "positive terrible", "negative terrible",
                                                                          "positive fine", "negative fine",
                                                                          "positive the", "negative the")
    body = _misshapen("text_none", answer, CHATTING)
    with pytest.raises(BadAnswer, match=r"^its choices\[0\] has no message content \(null or missing\)$"):
        parse_answer(body, CHAT, CHATTING)


def test_fewer_choices_pass_where_the_request_finds_out_whether_n_is_honoured():
    body = _misshapen("fewer_choices", _good(SAMPLING), SAMPLING)
    assert len(parse_answer(body, COMPLETIONS, SAMPLING, fewer_choices=True).choices) == 2


def test_vllm_s_own_answers_pass_and_keep_only_what_is_read():
    body = (RESPONSES / "echo.json").read_bytes()
    answer = parse_answer(body, COMPLETIONS, scoring_payload(PROMPT, ""))
    kept = json.loads(answer.cached())
    assert answer.raw_size == len(body) and set(kept) == {"model", "system_fingerprint", "choices", "raw_size"}
    assert set(kept["choices"][0]) == {"index", "text", "finish_reason", "logprobs"}
    assert set(kept["choices"][0]["logprobs"]) == {"tokens", "token_logprobs", "text_offset"}
    again = parse_answer(answer.cached(), COMPLETIONS, scoring_payload(PROMPT, ""), fresh=False)
    assert again == answer  # a cached answer is read back as it was, its size that of the body it came as


def test_a_server_s_own_raw_size_field_is_not_taken_for_the_body_s():
    answer = _good(SCORING)
    answer["raw_size"] = 3
    body = json.dumps(answer).encode()
    assert parse_answer(body, COMPLETIONS, SCORING).raw_size == len(body)


def test_choices_come_in_index_order_and_unasked_log_probabilities_are_not_read():
    answer = _good(SAMPLING)
    answer["choices"].reverse()
    answer["choices"][0]["logprobs"] = "whatever a server puts here when none were asked for"
    parsed = parse_answer(json.dumps(answer), COMPLETIONS, SAMPLING)
    assert [choice.index for choice in parsed.choices] == [0, 1, 2] and parsed.choices[0].logprobs is None


def test_an_echo_ignored_without_log_probabilities_is_an_answer_that_cannot_score_not_a_bad_one():
    answer = {"choices": [{"index": 0, "text": " positive", "logprobs": None}]}  # transformers serve ignores echo
    assert parse_answer(json.dumps(answer), COMPLETIONS, SCORING).choices[0].logprobs is None


def test_two_choices_with_the_same_index_are_refused():
    answer = _good(SAMPLING)
    answer["choices"][1]["index"] = 0
    with pytest.raises(BadAnswer, match=r"^two of its choices have the same index \(\[0, 0, 2\]\)$"):
        parse_answer(json.dumps(answer), COMPLETIONS, SAMPLING)


def test_an_answer_far_longer_than_max_tokens_allows_is_told():
    payload = {"prompt": "a", "max_tokens": 5}
    short, long = _good(payload), _good(payload)
    long["choices"][0]["text"] = " positive" * 66_667
    assert not far_too_long(parse_answer(json.dumps(short), COMPLETIONS, payload), payload)
    assert far_too_long(parse_answer(json.dumps(long), COMPLETIONS, payload), payload)


@pytest.mark.parametrize(("values", "words"), [
    ([None, -1.0, math.nan], "log-probability 2 is NaN"),
    ([-math.inf], r"log-probability 0 is -Infinity, not a finite number"),
    ([-0.5, 0.25], r"log-probability 1 is positive \(0.25\); a log-probability is at most 0"),
])
def test_log_probabilities_are_finite_and_at_most_zero(values, words):
    checked_logprobs([None, 0.0, -3.5])
    with pytest.raises(BadAnswer, match=words):
        checked_logprobs(values)


class Logprob:
    """vLLM's ``Logprob`` as its outputs hold it (``vllm.logprobs.Logprob``: logprob, rank, decoded_token)."""

    def __init__(self, logprob: float):
        self.logprob, self.rank, self.decoded_token = logprob, 1, None


def test_vllm_s_prompt_log_probabilities_are_checked_as_a_server_s():
    sent = [5, 6, 7, 8]
    scored = [None, {6: Logprob(-1.0)}, {7: Logprob(-2.0)}, {8: Logprob(-0.5), 3: Logprob(-0.1)}]
    assert answer_logprobs(sent, sent, scored, 2, "example 1's answer 1") == [-2.0, -0.5]
    with pytest.raises(BadAnswer, match=r"^vLLM's prompt log-probabilities of example 1's answer 1: the log-probability "
                                        r"of answer token 1 is NaN$"):
        answer_logprobs(sent, sent, [*scored[:3], {8: Logprob(math.nan)}], 2, "example 1's answer 1")
    with pytest.raises(BadAnswer, match=r"is positive \(2\.5\)"):
        answer_logprobs(sent, sent, [*scored[:2], {7: Logprob(2.5)}, scored[3]], 2, "example 1's answer 1")
    with pytest.raises(BadAnswer, match="vLLM scored other token ids than those sent"):
        answer_logprobs(sent, [5, 6, 7], scored, 2, "example 1's answer 1")
    with pytest.raises(BadAnswer, match="3 positions for 4 ids"):
        answer_logprobs(sent, sent, scored[:3], 2, "example 1's answer 1")
    with pytest.raises(BadAnswer, match="none for the id 8 at position 3"):
        answer_logprobs(sent, sent, [*scored[:3], {3: Logprob(-0.1)}], 2, "example 1's answer 1")
