"""The scripted fake Ollama served over real HTTP on 127.0.0.1, for a child process to talk to.

Steps are response bodies (streamed as NDJSON) or `HOLD`: the request is accepted and left unanswered
until `release()`, so a test knows a model call is in flight in the child.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.fakes.ollama import MODEL

HOLD = "hold"
HOLD_LIMIT_S = 60  # a held request is answered (with an error) after this, whatever happens


class FakeOllamaServer:
    """A threaded HTTP server replaying scripted chat steps; records each request body."""

    def __init__(self, steps: list[dict[str, Any] | str]) -> None:
        self.steps = list(steps)
        self.requests: list[dict[str, Any]] = []
        self.holding = threading.Event()
        self._release = threading.Event()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def release(self) -> None:
        self._release.set()

    def _next(self, body: dict[str, Any]) -> dict[str, Any] | str:
        with self._lock:
            self.requests.append(body)
            return self.steps.pop(0) if self.steps else {"error": "no scripted reply left"}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def do_GET(self) -> None:
                self._send(200, json.dumps({"models": [{"model": MODEL, "name": MODEL}]}).encode())

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))))
                step = fake._next(body)
                if step == HOLD:
                    fake.holding.set()
                    fake._release.wait(HOLD_LIMIT_S)
                    step = {"error": "released"}
                assert isinstance(step, dict)
                if "error" in step:
                    self._send(500, json.dumps(step).encode())
                else:
                    self._send(200, (json.dumps(step) + "\n").encode(), "application/x-ndjson")

            def _send(self, status: int, payload: bytes, kind: str = "application/json") -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", kind)
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the child was killed while we held its request

        return Handler

    @contextmanager
    def running(self) -> Iterator[FakeOllamaServer]:
        thread = threading.Thread(target=self._server.serve_forever, name="fake-ollama", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.release()
            self._server.shutdown()
            self._server.server_close()
            thread.join(timeout=10)
