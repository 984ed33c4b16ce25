"""Servers that fail on cue, for the engine tests: a proxy in front of a real server (and, in faulty_server.py, a
misbehaving one).

The proxy is real HTTP between the client and the real server: it answers the first requests with the
statuses it is given (429, 500, …) after ``delay`` seconds, then forwards every request and counts them; ``stop()`` makes it a
server that is no longer listening, ``start()`` brings it back on the same port.

tests/faulty_server.py's ``FaultyServer`` is an OpenAI-compatible server of its own that misbehaves on cue.
"""

from __future__ import annotations

import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from seedscope.runners.icl.engines.local_server import free_port


class QuietServer(ThreadingHTTPServer):
    """A threading HTTP server that says nothing when a client hangs up first (a client that timed out)."""

    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


class Proxy:
    """Forwards to ``target`` (a server's ``/v1`` URL), answering the first requests with ``failures`` statuses."""

    def __init__(self, target: str, failures: list[int] | None = None, stop_after: int | None = None,
                 delay: float = 0.0):
        self.root = target.rstrip("/").removesuffix("/v1")
        self.delay = delay
        self.failures = list(failures or [])
        self.stop_after = stop_after
        self.forwarded = 0
        self.failed = 0
        self.port = free_port()
        self._server: QuietServer | None = None
        self._stopped = threading.Event()  # cleared while a kill is under way, so that a restart waits for the port
        self._stopped.set()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> "Proxy":
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                self._forward(None)

            def do_POST(self):
                self._forward(self.rfile.read(int(self.headers.get("content-length", 0))))

            def _forward(self, body):
                if proxy.stop_after is not None and proxy.forwarded >= proxy.stop_after:
                    self.close_connection = True  # killed: a request that still got in is dropped unanswered
                    return
                time.sleep(proxy.delay)
                if proxy.failures:
                    status = proxy.failures.pop(0)
                    proxy.failed += 1
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("retry-after-ms", "10")
                    self.end_headers()
                    self.wfile.write(b'{"error": {"message": "injected by the test proxy"}}')
                    return
                request = urllib.request.Request(proxy.root + self.path, body, {"content-type": "application/json"},
                                                 method="POST" if body is not None else "GET")
                with urllib.request.urlopen(request, timeout=300) as answer:
                    data = answer.read()
                proxy.forwarded += 1
                killed = proxy.stop_after is not None and proxy.forwarded >= proxy.stop_after
                if killed:
                    proxy._stopped.clear()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                if killed:
                    threading.Thread(target=proxy.stop).start()  # killed mid-study, after this answer

        self._stopped.wait(timeout=60)  # a kill still closing the port
        self._server = QuietServer(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        self._stopped.set()
