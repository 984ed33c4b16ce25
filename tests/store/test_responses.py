"""The store's response cache: what was put is read back by another connection (as the text it was), a dropped row is
gone, keys follow the request exactly."""

from __future__ import annotations

import os

from seedscope.store.responses import RESPONSES_ENV, RESPONSES_FILE, ResponseCache, request_key, responses_in


def test_a_response_put_is_read_back_by_a_new_connection_and_a_dropped_one_is_gone(tmp_path):
    cache = ResponseCache(tmp_path / RESPONSES_FILE)
    key = request_key("http://h/v1", "completions", {"prompt": "a", "max_tokens": 1}, None)
    assert cache.get(key) is None
    cache.put(key, '{"choices": [{"text": " yes"}]}')
    cache.close()
    again = ResponseCache(tmp_path / RESPONSES_FILE)
    assert again.get(key) == '{"choices": [{"text": " yes"}]}' and len(again) == 1
    again.drop(key)
    assert again.get(key) is None and len(again) == 0
    again.put(key, "{}")
    again.close()  # a request still in flight when its run ended finds the cache closed
    again.put(key, "late")
    assert again.get(key) is None and len(again) == 0


def test_keys_ignore_the_order_of_fields_and_tell_reruns_and_servers_apart():
    payload = {"prompt": "a", "max_tokens": 1}
    assert request_key("u", "completions", payload, None) == request_key("u", "completions", dict(reversed(payload.items())), None)
    assert len({request_key("u", "completions", payload, None), request_key("u", "completions", payload, 2),
                request_key("v", "completions", payload, None), request_key("u", "chat", payload, None)}) == 4


def test_responses_in_names_the_store_file_and_restores_what_was_there(tmp_path, monkeypatch):
    monkeypatch.delenv(RESPONSES_ENV, raising=False)
    with responses_in(tmp_path) as path:
        assert os.environ[RESPONSES_ENV] == str(path) == str(tmp_path / RESPONSES_FILE)
        assert ResponseCache.of_sweep().path == path
    assert RESPONSES_ENV not in os.environ and ResponseCache.of_sweep() is None
    monkeypatch.setenv(RESPONSES_ENV, "/elsewhere.sqlite")
    with responses_in(tmp_path):
        pass
    assert os.environ[RESPONSES_ENV] == "/elsewhere.sqlite"
