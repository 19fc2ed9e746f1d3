"""A fake application behind HTTP on 127.0.0.1: an OpenAI-compatible chat endpoint
(``POST /v1/chat/completions``) and a JSON endpoint (``POST /ask`` with ``{"q": ...}``, answering
``{"data": {"answer": ...}, "sources": ...}``). Both answer with ``sim_fakes.answer``; a query holding
``CRASH`` gets HTTP 500 and one holding ``SLOW`` is answered after two seconds."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.simulator.sim_fakes import answer


class _Handler(BaseHTTPRequestHandler):
    seen: list[dict[str, Any]]

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError):  # the client gave up waiting (the timeout tests)
            self.wfile.write(data)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        type(self).seen.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if self.path.endswith("/chat/completions"):
            query = body["messages"][-1]["content"]
        elif self.path == "/ask":
            query = body.get("q", "")
        else:
            self._send(404, {"error": "no such path"})
            return
        if "CRASH" in query:
            self._send(500, {"error": "internal error"})
            return
        if "SLOW" in query:
            time.sleep(2)
        text = answer(query)
        if self.path == "/ask":
            self._send(200, {"data": {"answer": text}, "sources": "the knowledge base"})
        else:
            self._send(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]})


@contextmanager
def target_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """The server's base URL (``http://127.0.0.1:<port>``) and the requests it received."""
    seen: list[dict[str, Any]] = []
    handler = type("Handler", (_Handler,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
