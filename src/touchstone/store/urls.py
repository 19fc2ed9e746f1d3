"""Store locations given as URLs (``postgresql://user:password@host:port/db``): recognising them,
and showing them without their password.

A URL's password never leaves this module in a message: :func:`redact_url` is what the store's
``path``, its errors and the command line show.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

SCHEMES = ("postgresql", "postgres")
"""URL schemes that name a PostgreSQL store."""

_SECRET_PARAMS = {"password", "sslpassword", "passfile"}


def is_postgres_url(location: object) -> bool:
    """Whether a store location names a PostgreSQL server (``postgresql://`` or ``postgres://``;
    also the form a :class:`pathlib.Path` makes of one, with its ``//`` folded to ``/``)."""
    if not isinstance(location, (str, os.PathLike)):
        return False
    text = os.fspath(location)
    if not isinstance(text, str):
        return False
    scheme, sep, _ = text.partition(":")
    return bool(sep) and scheme.lower() in SCHEMES


def normalise_url(location: str | os.PathLike[str]) -> str:
    """The URL as libpq reads it: a ``postgresql:/host...`` that went through ``Path`` gets its
    second slash back."""
    text = os.fspath(location)
    scheme, _, rest = text.partition(":")
    if not rest.startswith("//"):
        rest = "/" + rest if rest.startswith("/") else "//" + rest
    return f"{scheme}:{rest}"


def redact_url(url: str) -> str:
    """``url`` without its password (in the user part or as a ``password=`` parameter); the rest
    (user, host, port, database, other parameters) kept so the message still says where."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            userinfo, _, hosts = netloc.rpartition("@")
            user = userinfo.split(":", 1)[0]
            netloc = f"{user}@{hosts}" if user else hosts
        query = parts.query
        if query:
            pairs = parse_qsl(query, keep_blank_values=True)
            query = urlencode([(k, v) for k, v in pairs if k.lower() not in _SECRET_PARAMS])
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # not a URL we can take apart: say only what kind of store it is
        return url.split(":", 1)[0] + "://(unreadable URL)"


def scrub(text: str, url: str) -> str:
    """``text`` (a driver's message) with the URL shown redacted and its password, wherever else it
    appears (plain or percent-encoded), masked."""
    text = text.replace(url, redact_url(url))
    secrets: list[str] = []
    try:
        parts = urlsplit(url)
        if parts.password:
            secrets += [parts.password, unquote(parts.password)]
        secrets += [v for k, v in parse_qsl(parts.query) if k.lower() in _SECRET_PARAMS and v]
    except ValueError:
        pass
    for secret in sorted(set(secrets), key=len, reverse=True):
        text = text.replace(secret, "***")
    return text
