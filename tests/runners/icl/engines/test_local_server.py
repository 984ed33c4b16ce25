"""``transformers serve`` started here: it answers while the block runs and is gone after it; a taken port is one line."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from seedscope.errors import SeedscopeError
from seedscope.runners.icl.engines.local_server import transformers_server


def test_a_taken_port_is_one_line(tiny_llama):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        with pytest.raises(SeedscopeError, match=f"^port {port} is taken, and the server is started there"):
            with transformers_server(tiny_llama, port=port):
                pass


def test_the_server_answers_inside_the_block_and_is_stopped_after_it(tiny_llama):
    def complete(url: str) -> dict:
        body = json.dumps({"model": str(tiny_llama), "prompt": "The film was", "max_tokens": 1}).encode()
        request = urllib.request.Request(url + "/completions", body, {"content-type": "application/json"})
        return json.loads(urllib.request.urlopen(request, timeout=60).read())

    with transformers_server(tiny_llama) as url:
        assert len(complete(url)["choices"]) == 1
    with pytest.raises(OSError):
        complete(url)
