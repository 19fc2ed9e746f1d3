"""How the dashboard keeps data as data: the response headers (a strict Content-Security-Policy: no
inline script or style, nothing from other origins), links built only from known paths, and JSON that
cannot close a surrounding HTML element.

Everything shown comes from runs (model outputs, judge reasons, run and column names), which anyone
who can write a dataset controls. The templates escape it (Jinja2 autoescape); the scripts write it
with ``textContent``; charts draw it on a canvas. These helpers cover what escaping does not.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote, urlencode

CONTENT_SECURITY_POLICY = "; ".join((
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "font-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
))
"""Scripts, styles and fetches from the dashboard's own origin only; no inline script or style
attribute runs, whatever a page happens to contain."""

SECURITY_HEADERS = {
    "Content-Security-Policy": CONTENT_SECURITY_POLICY,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Opener-Policy": "same-origin",
}


def path(*parts: object, **query: Any) -> str:
    """A link inside the dashboard: ``/`` and each part percent-encoded (``/`` included, so a run id
    cannot climb out of its segment), then the query's non-empty items. Always a path on the same
    origin, never a scheme such as ``javascript:``."""
    url = "/" + "/".join(quote(str(p), safe="") for p in parts)
    items = {k: v for k, v in query.items() if v not in (None, "")}
    return url + ("?" + urlencode(items) if items else "")


def safe_href(url: str) -> str:
    """``url`` when it is a path on this origin (``/...``, not ``//host``) or an ``http(s)`` URL, else
    ``#``: what a link built from data may point to."""
    text = url.strip()
    lowered = "".join(text.split()).lower()
    if text.startswith("/") and not text.startswith("//") and "\\" not in text:
        return text
    if lowered.startswith(("http://", "https://")):
        return text
    return "#"


_SCRIPT_SAFE = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                              "\u2029": "\\u2029"})


def json_bytes(value: Any) -> bytes:
    """``value`` as JSON with ``<``, ``>`` and ``&`` escaped (``\\u003c``...): the same data, but no
    ``</script>`` or markup survives even if a browser were to read it as HTML."""
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, default=str, separators=(",", ":"))
    return text.translate(_SCRIPT_SAFE).encode("utf-8")


_RAW_HEADERS = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in SECURITY_HEADERS.items()]


class SecurityHeadersMiddleware:
    """Adds :data:`SECURITY_HEADERS` to every HTTP response that does not set them itself.

    A plain ASGI middleware rather than ``@app.middleware("http")``: Starlette's function middleware
    runs each request through a task group and memory streams, which cost about as much as the
    whole feedback endpoint (``POST /api/feedback`` is sent once per production event)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers") or ())
                present = {bytes(name).lower() for name, _ in headers}
                headers.extend(h for h in _RAW_HEADERS if h[0] not in present)
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
