"""Where alerts go: the log (stderr), a webhook (JSON POST, retried, never fatal), a JSONL file.

The exit status for cron (``--once`` exits 1 when any alert fired) is the command line's business.
A webhook URL may carry credentials (``https://user:token@host/hook``): they are sent as HTTP basic
authentication and never appear in a log line; only the URL without them (and without its query,
where tokens also live) is ever shown.
"""

from __future__ import annotations

import base64
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit, urlunsplit

from touchstone.monitor.alerts import Alert

log = logging.getLogger("touchstone.monitor")


class AlertSink(Protocol):
    """Something alerts are sent to; :meth:`send` never raises."""

    def send(self, alerts: Sequence[Alert]) -> None: ...


def redact_url(url: str) -> str:
    """``url`` without user, password and query (what may be shown in a log)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


class LogSink:
    """Each alert as one line through ``emit`` (by default the ``touchstone.monitor`` logger)."""

    def __init__(self, emit: Callable[[str], None] | None = None) -> None:
        self.emit = emit or (lambda line: log.warning("%s", line))

    def send(self, alerts: Sequence[Alert]) -> None:
        for alert in alerts:
            self.emit(f"ALERT {alert.message}")


class FileSink:
    """Each alert appended to a JSONL file (the monitor's ``alerts.jsonl``)."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def send(self, alerts: Sequence[Alert]) -> None:
        if not alerts:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as fh:
                for alert in alerts:
                    fh.write(json.dumps(alert.as_dict(), ensure_ascii=False) + "\n")
        except OSError as exc:
            log.warning("could not append alerts to %s: %s", self.path, exc)


class WebhookSink:
    """POSTs ``{"alerts": [...]}`` as JSON to a URL, with a few retries on network errors and 5xx/429."""

    def __init__(self, url: str, *, retries: int = 3, timeout: float = 10.0, backoff: float = 0.5) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"expected an http(s) URL for the webhook, got {redact_url(url)!r}")
        self.shown = redact_url(url)
        host = parts.hostname + (f":{parts.port}" if parts.port else "")
        self._url = urlunsplit((parts.scheme, host, parts.path, parts.query, ""))
        self._headers = {"Content-Type": "application/json", "User-Agent": "touchstone-monitor"}
        if parts.username is not None:
            token = f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()
            self._headers["Authorization"] = "Basic " + base64.b64encode(token).decode("ascii")
        self.retries, self.timeout, self.backoff = retries, timeout, backoff
        self.delivered = 0
        self.failed = 0

    def send(self, alerts: Sequence[Alert]) -> None:
        if not alerts:
            return
        body = json.dumps({"alerts": [a.as_dict() for a in alerts]}, ensure_ascii=False).encode("utf-8")
        why = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff * 2 ** (attempt - 1))
            why = self._post(body)
            if not why:
                self.delivered += 1
                return
            if why.startswith("HTTP 4") and not why.startswith("HTTP 429"):
                break  # the receiver refuses this request: sending it again changes nothing
        self.failed += 1
        log.warning("webhook %s: %d alert(s) not delivered (%s)", self.shown, len(alerts), why)

    def _post(self, body: bytes) -> str:
        """'' on success, else why it failed (never the URL's credentials)."""
        request = urllib.request.Request(self._url, data=body, headers=self._headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as reply:
                reply.read()
            return ""
        except urllib.error.HTTPError as exc:
            return f"HTTP {exc.code}"
        except (urllib.error.URLError, OSError) as exc:
            reason: Any = getattr(exc, "reason", exc)
            return f"{type(exc).__name__}: {reason}"
