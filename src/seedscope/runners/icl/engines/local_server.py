"""Servers started on this machine: ``transformers serve``, which the engines demo and the tests ask, or any other.

transformers ships its own OpenAI-compatible server (``transformers serve FOLDER``, with the
``serve`` extra's fastapi and uvicorn); started here on a local port it is a real server, reached
over HTTP like any other, and stopped when the block ends. :func:`serving` does the same for any
command (the tests start vLLM's server with it).
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from seedscope.errors import SeedscopeError


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _check_free(port: int) -> None:
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server binds: a closed connection's port is free
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            raise SeedscopeError(f"port {port} is taken, and the server is started there; stop what listens on it") from None


@contextmanager
def transformers_server(folder: str | Path, port: int | None = None, timeout: float = 180) -> Iterator[str]:
    """``transformers serve FOLDER`` on ``port`` (default: a free one); yields its ``/v1`` URL once ``/health`` answers."""
    try:
        import fastapi  # noqa: F401
        import openai  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError:
        raise SeedscopeError("transformers serve needs the serve extra (fastapi, uvicorn, openai): "
                             "pip install 'seedscope[serve]' (scripts/install.sh installs it)") from None
    program = Path(sys.executable).with_name("transformers")
    with serving(lambda port: [str(program), "serve", str(folder), "--host", "127.0.0.1", "--port", str(port),
                               "--device", "cpu"], port, timeout) as url:
        yield url


@contextmanager
def serving(command: Callable[[int], list[str]], port: int | None = None, timeout: float = 180) -> Iterator[str]:
    """The server ``command(port)`` starts (on a free port by default), until the block ends: its ``/v1`` URL once
    ``/health`` answers."""
    if port is None:
        port = free_port()
    else:
        _check_free(port)
    # its log goes to a file: a pipe nobody reads fills up, and the server then stops in the middle of a write
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(command(port), stdout=subprocess.DEVNULL, stderr=log, text=True)
        try:
            deadline = time.monotonic() + timeout
            while not _healthy(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    process.kill()
                    log.seek(0)
                    reason = log.read().strip().splitlines()[-1:] or ["no output"]
                    raise SeedscopeError(f"{Path(command(port)[0]).name} did not start within {timeout:.0f} s: "
                                         f"{reason[0]}")
                time.sleep(0.5)
            yield f"http://127.0.0.1:{port}/v1"
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()


def _healthy(port: int) -> bool:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2)
        return True
    except OSError:
        return False
