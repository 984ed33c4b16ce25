"""Asking a server through a proxy that fails on cue: 429 and 500 retried, then one line; a server killed mid-study
loses nothing already answered; no server, or no key, is one line."""

from __future__ import annotations

import time

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan import FactorSeeds, RunSpec
from seedscope.plan.hparams import ICLSettings
from seedscope.runners.icl import runner as icl
from seedscope.runners.icl.engines.client import COMPLETIONS, ServerClient, api_key
from seedscope.runners.icl.engines.local_server import free_port
from seedscope.store.responses import RESPONSES_FILE, ResponseCache, responses_in

from ....servers import Proxy


def _client(url, **settings):
    return ServerClient(ICLSettings.from_hparams({"engine": "openai", "base_url": url, **settings}), "model")


def test_no_server_listening_is_one_line():
    url = f"http://127.0.0.1:{free_port()}/v1"
    with pytest.raises(SeedscopeError, match=rf"^no server answers at {url} \(is it running, and is the URL right\?\)$"):
        _client(url, max_retries=0).ask(COMPLETIONS, {"prompt": "a", "max_tokens": 1})


def test_a_named_key_variable_that_is_unset_is_one_line_and_a_set_one_is_read(monkeypatch):
    monkeypatch.delenv("SEEDSCOPE_TEST_KEY", raising=False)
    with pytest.raises(SeedscopeError, match="^the API key variable SEEDSCOPE_TEST_KEY .api_key_env. is not set"):
        api_key("SEEDSCOPE_TEST_KEY")
    monkeypatch.setenv("SEEDSCOPE_TEST_KEY", "sk-secret")
    assert api_key("SEEDSCOPE_TEST_KEY") == "sk-secret" and api_key(None) == "none"


@pytest.mark.slow
def test_429_and_500_are_retried_and_a_server_that_keeps_failing_is_one_line(smollm2_server, smollm2_folder):
    proxy = Proxy(smollm2_server, failures=[429, 500]).start()
    try:
        client = ServerClient(ICLSettings.from_hparams({"engine": "openai", "base_url": proxy.url, "max_retries": 2}),
                              str(smollm2_folder))
        answer = client.ask(COMPLETIONS, {"prompt": "Review: great.\nSentiment:", "max_tokens": 2, "temperature": 0})
        assert answer["choices"][0]["text"] and (proxy.failed, proxy.forwarded) == (2, 1)
        proxy.failures = [503, 503, 503]
        with pytest.raises(SeedscopeError, match=rf"^the server at {proxy.url} answered 503 to a completions request, "
                                                 "still after 2 retries: injected by the test proxy$"):
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
        with pytest.raises(SeedscopeError, match="^no server answers at"):
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
        with pytest.raises(SeedscopeError, match="answered 500 to a completions request, still after 0 retries"):
            client.ask_all([(COMPLETIONS, {"prompt": str(i), "max_tokens": 1}) for i in range(20)])
        time.sleep(0.5)  # what was in flight has ended
        assert proxy.failed <= 2  # the one that failed and the one in flight beside it; not the other 18
    finally:
        proxy.stop()


def test_a_server_slower_than_the_timeout_is_one_line():
    proxy = Proxy("http://127.0.0.1:9/v1", failures=[500], delay=2.0).start()
    try:
        client = _client(proxy.url, request_timeout=0.5, max_retries=1)
        with pytest.raises(SeedscopeError, match=rf"^the server at {proxy.url} did not answer within request_timeout "
                                                 r"\(0.5 s\), asked 2 time\(s\); raise request_timeout or lower concurrency$"):
            client.ask(COMPLETIONS, {"prompt": "a", "max_tokens": 1})
    finally:
        proxy.stop()
