"""The monitor's HTTP endpoint (standard library server, one thread per connection):

- ``POST /v1/interactions``: a JSON object, a JSON array of objects, or JSONL (one object a line);
  answers ``{"received": n, "kept": k}``, with ``"rejected": [{"where", "reason"}, ...]`` listing
  the interactions that could not be monitored (the first hundred);
- ``POST /v1/traces``: OTLP/HTTP traces, protobuf (``application/x-protobuf``) or JSON
  (``application/json``), gzip-compressed or not; answers an empty ``ExportTraceServiceResponse``;
- ``GET /healthz``: ``ok``.

A body that cannot be read at all gets 400 with the reason; a bad interaction inside a good body is
counted and logged by the monitor, not refused (the sender cannot fix production traffic).
"""

from __future__ import annotations

import gzip
import json
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from touchstone.monitor.interactions import NotJson
from touchstone.monitor.sources.otlp import spans_from_json, spans_from_protobuf

MAX_BODY = 64 * 1024 * 1024


def decode_interactions(body: bytes) -> list[tuple[Any, str]]:
    """``(object, where)`` pairs from a JSON object, a JSON array or JSONL body; a JSONL line that
    is not JSON becomes a string object, rejected (and counted) by the monitor."""
    text = body.decode("utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        items = json.loads(text)
        return [(item, f"request item {i}") for i, item in enumerate(items, start=1)]
    try:
        return [(json.loads(text), "request body")]
    except ValueError:
        pass
    pairs: list[tuple[Any, str]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                pairs.append((json.loads(line), f"request line {number}"))
            except ValueError as exc:
                pairs.append((NotJson(str(exc)), f"request line {number}"))
    return pairs


class _Handler(BaseHTTPRequestHandler):
    server: MonitorHTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # one line per request would drown the alerts

    def _reply(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes | None:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self._reply(413, json.dumps({"error": f"body over {MAX_BODY} bytes"}).encode())
            return None
        body = self.rfile.read(length)
        encoding = (self.headers.get("Content-Encoding") or "").lower()
        try:
            if encoding == "gzip":
                return gzip.decompress(body)
            if encoding == "deflate":
                return zlib.decompress(body)
        except (OSError, zlib.error) as exc:
            self._reply(400, json.dumps({"error": f"cannot decompress the body: {exc}"}).encode())
            return None
        return body

    def do_GET(self) -> None:
        if self.path.split("?")[0] == "/healthz":
            self._reply(200, b"ok", "text/plain")
        else:
            self._reply(404, b'{"error": "not found"}')

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        if path not in ("/v1/interactions", "/v1/traces"):
            self._reply(404, b'{"error": "not found; POST /v1/interactions or /v1/traces"}')
            return
        body = self._body()
        if body is None:
            return
        monitor = self.server.monitor
        content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
        try:
            if path == "/v1/traces":
                protobuf = content_type == "application/x-protobuf"
                spans = list(spans_from_protobuf(body) if protobuf else spans_from_json(json.loads(body)))
                monitor.ingest_spans(spans)
                if protobuf:
                    self._reply(200, b"", "application/x-protobuf")
                else:
                    self._reply(200, b"{}")
                return
            pairs = decode_interactions(body)
        except Exception as exc:  # a body that cannot be read: the sender's error, not the monitor's
            self._reply(400, json.dumps({"error": f"cannot read the body: {exc}"[:500]}).encode())
            return
        rejected: list[dict[str, str]] = []
        kept = monitor.ingest_objects(pairs, rejected)
        answer: dict[str, Any] = {"received": len(pairs), "kept": kept}
        if rejected:  # accepted whole (production traffic is not refused), but the sender is told why
            answer["rejected"] = rejected
        self._reply(200, json.dumps(answer).encode())


class MonitorHTTPServer(ThreadingHTTPServer):
    """The endpoint, feeding ``monitor`` (a :class:`~touchstone.monitor.service.Monitor`)."""

    daemon_threads = True

    def __init__(self, monitor: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.monitor = monitor
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> MonitorHTTPServer:
        """Serve in a background thread."""
        self._thread = threading.Thread(target=self.serve_forever, name="monitor-http", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
