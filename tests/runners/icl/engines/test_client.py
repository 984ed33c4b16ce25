"""Asking a server that fails on cue (a proxy in front of the real one, and a misbehaving server of the tests' own):
each status and transport failure one line in its own words with the tries really made, Retry-After honoured or said,
the key masked in every answer, bad answers never cached and cached garbage asked again, the study's first request
bounded, what the server did noted, and what the requests wait on said while they wait."""

from __future__ import annotations

import json
import time

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.plan.hparams import ICLSettings
from seedscope.progress import status_shown
from seedscope.runners.icl import runner as icl
from seedscope.runners.icl.engines import client as client_module
from seedscope.runners.icl.engines.answers import COMPLETIONS
from seedscope.runners.icl.engines.client import ServerClient, api_key
from seedscope.runners.icl.engines.local_server import free_port
from seedscope.runners.icl.engines.server import scoring_payload
from seedscope.store.responses import RESPONSES_FILE, ResponseCache, request_key, responses_in

from ....faulty_server import FaultyServer
from ....servers import Proxy

KEY = "sk-test-5ecret-0123456789"
SCORING = scoring_payload("Review: a gorgeous, witty film.\nSentiment:", " positive")


def _client(url, served="model", first=False, **settings):
    return ServerClient(ICLSettings.from_hparams({"engine": "openai", "base_url": url, **settings}), served, first=first)


@pytest.fixture
def server():
    with FaultyServer() as running:
        yield running


def test_no_server_listening_is_one_line():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(SeedscopeError, match=rf"^no server answers at {url} \(is it running, and is the URL right\?\), "
                                             r"asked 1 time\(s\)$"):
        _client(url, max_retries=0).ask(COMPLETIONS, {"prompt": "a", "max_tokens": 1})


def test_a_named_key_variable_that_is_unset_is_one_line_and_a_set_one_is_read(monkeypatch):
    monkeypatch.delenv("SEEDSCOPE_TEST_KEY", raising=False)
    with pytest.raises(SeedscopeError, match="^the API key variable SEEDSCOPE_TEST_KEY .api_key_env. is not set"):
        api_key("SEEDSCOPE_TEST_KEY")
    monkeypatch.setenv("SEEDSCOPE_TEST_KEY", "sk-secret")
    assert api_key("SEEDSCOPE_TEST_KEY") == "sk-secret" and api_key(None) is None


@pytest.mark.parametrize(("fault", "tries", "words"), [
    ("401", 1, r"refused the API key \(401\): Incorrect API key provided: \*\*\*\.$"),
    ("403", 1, r"refused the API key \(403\): the key \*\*\* may not use this model$"),
    ("404", 1, r"has no model 'model' or no such route \(404\) for a completions request \(prompt ending '.*'\): The "
               "model `faulty` does not exist; check --model"),
    ("400", 1, r"refused a completions request \(prompt ending '.*'\) \(400\): max_tokens is too large for key \*\*\*$"),
    ("422", 1, r"refused a completions request \(prompt ending '.*'\) \(422\): prompt: field required$"),
    ("429", 3, r"answered 429 to a completions request \(prompt ending '.*'\), asked 3 time\(s\): Rate limit reached"),
    ("500", 3, r"answered 500 to a completions request .*, asked 3 time\(s\): internal error while serving \*\*\*$"),
    ("502", 3, r"answered 502 to a completions request .*, asked 3 time\(s\): bad gateway$"),
    ("503", 3, r"answered 503 to a completions request .*, asked 3 time\(s\): overloaded$"),
    ("retry_after_long", 1, r"answered 503 .*, asked 1 time\(s\): overloaded; it asks to be asked again in 100000 s "
                            r"\(Retry-After\), longer than seedscope waits \(request_timeout, 60 s\), so it was not: try "
                            "again later$"),
])
def test_a_status_is_said_as_it_is_with_the_tries_really_made_and_the_key_masked(monkeypatch, fault, tries, words):
    monkeypatch.setenv("SEEDSCOPE_TEST_KEY", KEY)
    with FaultyServer(key=KEY) as server:
        server.cue(fault)
        client = _client(server.url, max_retries=2, api_key_env="SEEDSCOPE_TEST_KEY")
        with pytest.raises(SeedscopeError, match=rf"^the server at {server.url} {words}") as raised:
            client.ask(COMPLETIONS, SCORING)
        assert server.requests == tries and KEY not in str(raised.value)


def test_a_server_that_wants_a_key_and_got_none_is_told_where_to_name_it():
    with FaultyServer(key=KEY) as server:
        with pytest.raises(SeedscopeError, match=r"wants an API key \(401\): Incorrect API key provided: none\.; name the "
                                                 "environment variable holding it with --api-key-env$"):
            _client(server.url).ask(COMPLETIONS, SCORING)


@pytest.mark.parametrize(("fault", "tries", "words"), [
    ("reset", 2, r"reset the connection before its answer was read, asked 2 time\(s\) \(.*\)$"),
    ("cut", 2, r"cut its answer short: the connection closed before the body was whole, asked 2 time\(s\) \(peer closed "
               r"connection without sending complete message body \(received \d+ bytes, expected 4000\)\)$"),
    ("close", 2, r"closed the connection without answering, asked 2 time\(s\) \(Server disconnected without sending a "
                 r"response\.\)$"),
    ("redirect_loop", 1, r"redirects in a loop \(Exceeded maximum allowed redirects\.\); give --base-url the server's "
                         "own URL$"),
    ("hang", 2, r"took the request but did not answer within 0\.5 s, asked 2 time\(s\); raise request_timeout"),
])
def test_a_transport_failure_is_said_in_its_own_words(server, fault, tries, words):
    server.cue(fault)
    client = _client(server.url, max_retries=1, request_timeout=0.5)
    with pytest.raises(SeedscopeError, match=rf"^the server at {server.url} {words}"):
        client.ask(COMPLETIONS, SCORING)
    assert server.requests == (tries * 21 if fault == "redirect_loop" else tries)  # a loop is followed 20 times
    client.close()


def test_a_key_in_any_answer_is_masked_and_never_cached(monkeypatch, tmp_path):
    monkeypatch.setenv("SEEDSCOPE_TEST_KEY", KEY)
    with FaultyServer(key=KEY) as server, responses_in(tmp_path):
        client = _client(server.url, max_retries=0, api_key_env="SEEDSCOPE_TEST_KEY")
        said = []
        for fault in ("401", "403", "400", "500", "key_in_header", "key_in_body", "redirect"):
            server.fix().cue(fault)
            try:
                answer = client.ask(COMPLETIONS, {**SCORING, "prompt": f"{fault}: {SCORING['prompt']}"})
                said += [answer.cached(), *answer.texts()]
            except SeedscopeError as error:
                said.append(str(error))
        said += client.notes()
        client.close()
    assert len(said) > 7 and not any(KEY in text for text in said)
    assert KEY.encode() not in (tmp_path / RESPONSES_FILE).read_bytes()


def test_a_key_in_the_url_is_masked_where_it_is_shown(monkeypatch):
    monkeypatch.setenv("SEEDSCOPE_TEST_KEY", KEY)
    url = f"http://127.0.0.1:{free_port()}/v1?key={KEY}"
    with pytest.raises(SeedscopeError) as raised:
        _client(url, max_retries=0, api_key_env="SEEDSCOPE_TEST_KEY").ask(COMPLETIONS, SCORING)
    assert KEY not in str(raised.value) and "key=***" in str(raised.value)


def test_a_bad_answer_is_not_cached_and_a_good_one_is_cached_with_only_what_is_read(server, tmp_path):
    with responses_in(tmp_path):
        client = _client(server.url, max_retries=0)
        server.cue("nan", count=1)
        with pytest.raises(SeedscopeError, match=r"gave a bad answer to a completions request .*: its log-probability of "
                                                 r"token 6 is NaN; its body began '\{\"id\": \"cmpl-faulty\""):
            client.ask(COMPLETIONS, SCORING)
        cache = ResponseCache(tmp_path / RESPONSES_FILE)
        assert len(cache) == 0
        server.cue("huge", start=1)
        answer = client.ask(COMPLETIONS, SCORING)  # 2 MB of fields nobody reads
        assert len(cache) == 1 and answer.raw_size > 2_000_000
        assert len(cache.get(request_key(server.url, COMPLETIONS, {"model": "model", **SCORING}, None))) < 2_000
        client.close()


def test_garbage_cached_before_answers_were_checked_is_dropped_when_read_and_asked_again(server, tmp_path):
    payload = {"model": "model", **SCORING}
    garbage = server.completion(payload, 0)
    garbage["choices"][0]["logprobs"]["token_logprobs"].pop()  # what an older seedscope cached without a look
    with responses_in(tmp_path):
        cache = ResponseCache(tmp_path / RESPONSES_FILE)
        key = request_key(server.url, COMPLETIONS, payload, None)
        cache.put(key, json.dumps(garbage))
        client = _client(server.url, max_retries=0)
        answer = client.ask(COMPLETIONS, SCORING)
        assert (client.asked, client.cached, client.dropped, server.requests) == (1, 0, 1, 1)
        assert len(answer.choices[0].logprobs.token_logprobs) == len(answer.choices[0].logprobs.tokens)
        again = _client(server.url, max_retries=0)
        again.ask(COMPLETIONS, SCORING)  # the good answer that replaced it is read back
        assert (again.asked, again.cached, again.dropped, server.requests) == (0, 1, 0, 1)
        assert any("were dropped and asked again" in note for note in client.notes()) and again.notes() == []
        for each in (client, again):
            each.close()


@pytest.mark.parametrize(("fault", "said"), [
    ("finish_length", "answers stopped at max_tokens (finish_reason: length)"),
    ("long_text", "answers held far more text than max_tokens tokens can"),
    ("other_model", "the server answered as model 'someone-elses-model' when 'model' was asked for"),
    ("redirect", "the server redirected requests to http://127.0.0.1:{port}/moved/v1, and they were followed"),
])
def test_what_the_server_did_is_noted_once(server, fault, said):
    server.cue(fault)
    client = _client(server.url, max_retries=0)
    client.ask_all([(COMPLETIONS, {"prompt": f"Review {i}:", "max_tokens": 5, "temperature": 0}) for i in range(3)])
    notes = client.notes()
    assert len(notes) == 1 and notes[0].startswith(said.format(port=server.port)), notes
    client.close()


def test_a_greedy_answer_of_a_behaving_server_is_noted_for_nothing(server):
    client = _client(server.url, max_retries=0)
    client.ask_all([(COMPLETIONS, {"prompt": f"Review {i}:", "max_tokens": 5, "temperature": 0}) for i in range(3)])
    assert client.notes() == [] and client.served == {"model"} and client.fingerprints == {"faulty-1"}


class Shown:
    """A display that keeps what it was told to show."""

    def __init__(self):
        self.said: list[str | None] = []

    def status(self, text):
        self.said.append(text)


def test_while_requests_wait_the_display_says_how_many_are_in_flight_and_how_many_were_retried():
    shown = Shown()
    with FaultyServer(slow_seconds=3.5) as server, status_shown(shown):
        server.cue("503", count=2).cue("slow", start=2)
        client = _client(server.url, max_retries=3, concurrency=2)
        client.ask_all([(COMPLETIONS, {"prompt": f"Review {i}:", "max_tokens": 5, "temperature": 0}) for i in range(2)])
        client.close()
    said = [text for text in shown.said if text]
    assert any("request(s) in flight at" in text and "the oldest for" in text for text in said), said
    assert any("retried so far (last: 503" in text for text in said), said
    assert shown.said[-1] is None  # said no more once nothing waits


def test_the_study_s_first_request_gives_up_within_its_budget_and_says_it_waits(monkeypatch):
    monkeypatch.setattr(client_module, "FIRST_REQUEST_SECONDS", 3.0)
    monkeypatch.setattr(client_module, "FIRST_TRY_SECONDS", 1.0)
    shown = Shown()
    with FaultyServer() as server, status_shown(shown):
        server.cue("hang")
        started = time.monotonic()
        with pytest.raises(SeedscopeError, match=rf"^the server at {server.url} took the study's first request but did "
                                                 r"not answer within 3 s, asked \d time\(s\); if it is slow to start "
                                                 r"\(loading its model\), set request_timeout, e.g. --set "
                                                 "request_timeout=300$"):
            _client(server.url, first=True).ask(COMPLETIONS, SCORING)
        assert time.monotonic() - started < 5
    assert any(text and "waiting for the server at" in text and "to answer the study's first request" in text
               for text in shown.said), shown.said


def test_a_request_timeout_that_was_set_is_honoured_by_the_first_request_too(server):
    client = _client(server.url, first=True, request_timeout=90)
    assert (client._timeout, client._budget) == (90, None)
    assert (_client(server.url, first=True)._budget, _client(server.url)._budget) == (client_module.FIRST_REQUEST_SECONDS,
                                                                                       None)


@pytest.mark.slow
def test_429_and_500_are_retried_and_a_server_that_keeps_failing_is_one_line(smollm2_server, smollm2_folder):
    proxy = Proxy(smollm2_server, failures=[429, 500]).start()
    try:
        client = ServerClient(ICLSettings.from_hparams({"engine": "openai", "base_url": proxy.url, "max_retries": 2}),
                              str(smollm2_folder))
        answer = client.ask(COMPLETIONS, {"prompt": "Review: great.\nSentiment:", "max_tokens": 2, "temperature": 0})
        assert answer.texts()[0] and (proxy.failed, proxy.forwarded) == (2, 1)
        proxy.failures = [503, 503, 503]
        with pytest.raises(SeedscopeError, match=rf"^the server at {proxy.url} answered 503 to a completions request "
                                                 r"\(prompt ending 'other'\), asked 3 time\(s\): injected by the test "
                                                 "proxy$"):
            client.ask(COMPLETIONS, {"prompt": "other", "max_tokens": 1, "temperature": 0})
        assert proxy.failed == 5
    finally:
        proxy.stop()


@pytest.mark.slow
def test_a_server_killed_mid_run_loses_nothing_answered_and_the_rerun_asks_only_the_rest(
        smollm2_server, smollm2_folder, data_dir, tmp_path):
    proxy = Proxy(smollm2_server, stop_after=5).start()
    hparams = {"shots": 1, "max_eval_examples": 8, "predict": "generate", "engine": "openai", "base_url": proxy.url,
               "max_retries": 0, "concurrency": 1}
    spec = RunSpec("sst2", str(smollm2_folder), FactorSeeds.tied(3), method="icl", hparams=hparams)
    with responses_in(tmp_path):
        # killed: the request in flight is dropped unanswered (closed, reset as its answer was read, or refused when
        # it came after the server stopped listening: the timing's)
        with pytest.raises(SeedscopeError, match=r"^(the server at .* (closed the connection without answering|reset the "
                                                 r"connection before its answer was read)|no server answers at .*), "
                                                 r"asked 1 time\(s\)"):
            icl.run(spec, data_dir)
        assert len(ResponseCache(tmp_path / RESPONSES_FILE)) == 5
        proxy.stop_after = None
        proxy.start()
        result = icl.run(spec, data_dir)
    proxy.stop()
    assert proxy.forwarded == 5 + 3
    assert (result.environment["requests_asked"], result.environment["responses_cached"]) == (3, 5)
    assert len(result.predictions) == 8


def test_the_first_failure_ends_the_run_and_asks_nothing_more():
    proxy = Proxy("http://127.0.0.1:9/v1", failures=[500] * 40).start()  # it never forwards: no server behind it
    try:
        client = ServerClient(ICLSettings.from_hparams({"engine": "openai", "base_url": proxy.url, "max_retries": 0,
                                                        "concurrency": 2}), "model")
        with pytest.raises(SeedscopeError, match=r"answered 500 to a completions request \(prompt ending '\d+'\), asked "
                                                 r"1 time\(s\): injected by the test proxy$"):
            client.ask_all([(COMPLETIONS, {"prompt": str(i), "max_tokens": 1}) for i in range(20)])
        time.sleep(0.5)  # what was in flight has ended
        assert proxy.failed <= 2  # the one that failed and the one in flight beside it; not the other 18
    finally:
        proxy.stop()


def test_a_failure_while_others_wait_for_a_retry_ends_their_wait(server):
    server.cue("401", start=1).cue("503", start=0, count=1)
    client = _client(server.url, max_retries=5, concurrency=2)
    started = time.monotonic()
    with pytest.raises(SeedscopeError, match=r"refused|wants an API key|401"):
        client.ask_all([(COMPLETIONS, {"prompt": str(i), "max_tokens": 1}) for i in range(4)])
    assert time.monotonic() - started < 5


def test_a_server_slower_than_the_timeout_is_one_line():
    proxy = Proxy("http://127.0.0.1:9/v1", failures=[500], delay=2.0).start()
    try:
        client = _client(proxy.url, request_timeout=0.5, max_retries=1)
        with pytest.raises(SeedscopeError, match=rf"^the server at {proxy.url} took the request but did not answer within "
                                                 r"0\.5 s, asked 2 time\(s\); raise request_timeout \(--set "
                                                 "request_timeout=…\\) if it is slow, or lower concurrency$"):
            client.ask(COMPLETIONS, {"prompt": "a", "max_tokens": 1})
    finally:
        proxy.stop()
