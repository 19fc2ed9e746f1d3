"""Credentials in URLs removed before a URL is stored, logged or shown.

``http://user:secret@host/v1`` keeps its scheme, host, path and query but loses its user information
(``http://***@host/v1``), and query parameters that carry keys (``api-key``, ``key``, ``token``,
``sig``...) have their values replaced. :func:`redact_urls` does the same to every URL inside a text
(an error message, a log line), and :func:`redact_config` to every string of a configuration.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"

_SECRET_QUERY = re.compile(
    r"(?i)^(api[-_]?key|key|code|token|access[-_]?token|auth|authorization|password|pwd|secret|sig|"
    r"signature|client[-_]?secret)$"
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://[^\s\"'<>]+")


def redact_url(url: str) -> str:
    """``url`` without credentials: user information replaced by ``***`` and secret-carrying query
    values masked. Text that is not a URL comes back unchanged."""
    if not isinstance(url, str) or "://" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return _strip_userinfo(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = MASK + "@" + netloc.rpartition("@")[2]
    query = parts.query
    if query:
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_SECRET_QUERY.match(k) for k, _ in pairs):
            query = urlencode([(k, MASK if _SECRET_QUERY.match(k) else v) for k, v in pairs], safe="*")
    if netloc == parts.netloc and query == parts.query:
        return url
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _strip_userinfo(url: str) -> str:
    scheme, _, rest = url.partition("://")
    authority, slash, tail = rest.partition("/")
    if "@" in authority:
        authority = MASK + "@" + authority.rpartition("@")[2]
    return f"{scheme}://{authority}{slash}{tail}"


def redact_urls(text: str) -> str:
    """``text`` with every URL in it passed through :func:`redact_url`."""
    if not isinstance(text, str) or "://" not in text:
        return text
    return _URL.sub(lambda m: redact_url(m.group(0)), text)


def redact_config(value: Any) -> Any:
    """A copy of a JSON-like value (dicts, lists, strings) with every URL in its strings redacted."""
    if isinstance(value, str):
        return redact_urls(value)
    if isinstance(value, Mapping):
        return {k: redact_config(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_config(v) for v in value]
    return value
