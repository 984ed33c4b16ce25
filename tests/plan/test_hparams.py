"""Hyper-parameters: a wrong value is refused in one sentence naming it."""

from __future__ import annotations

import pytest

from seedscope.errors import SeedscopeError
from seedscope.plan.hparams import FinetuneSettings, ICLSettings


@pytest.mark.parametrize("value", [0, -2, 1.5, "two"])
def test_fused_chunk_takes_a_positive_whole_number_of_members(value):
    with pytest.raises(SeedscopeError, match="^hyper-parameter fused_chunk: "):
        FinetuneSettings.from_hparams({"fused_chunk": value})
    assert FinetuneSettings.from_hparams({"fused_chunk": 2}).fused_chunk == 2
    assert FinetuneSettings.from_hparams({}).fused_chunk is None


@pytest.mark.parametrize(("url", "said"), [
    ("ftp://h:8000/v1", r"base_url 'ftp://h:8000/v1' is not an http:// or https:// URL"),
    ("localhost:8000/v1", r"base_url 'localhost:8000/v1' is not an http:// or https:// URL"),
    ("http://h:0x/v1", r"base_url 'http://h:0x/v1' is malformed"),
    ("http://h:70000/v1", r"base_url 'http://h:70000/v1' is malformed"),
    ("https:///v1", r"base_url 'https:///v1' is malformed"),
    ("http://a host/v1", r"base_url 'http://a host/v1' is malformed"),
])
def test_a_server_s_url_is_an_http_url_with_a_host(url, said):
    assert ICLSettings.from_hparams({"engine": "openai", "base_url": "https://api.example.com:443/v1"}).base_url
    with pytest.raises(SeedscopeError, match=rf"^hyper-parameters: {said}"):
        ICLSettings.from_hparams({"engine": "openai", "base_url": url})
