"""Helpers of the monitor tests: a loopback receiver for webhooks and OTLP log exports."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Receiver:
    """A loopback HTTP server recording every POST (JSON bodies decoded); ``fail_first`` answers 503
    to that many requests before accepting."""

    url: str
    requests: list[Received] = field(default_factory=list)
    fail_first: int = 0


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver("")

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            if state.fail_first > 0:
                state.fail_first -= 1
                self.send_response(503)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            state.requests.append(Received(self.path, dict(self.headers.items()), json.loads(raw or b"null")))
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
