"""Requests to an OpenAI-compatible server sent straight over one aiohttp session.

The backend already builds each request body itself (:meth:`OpenAIBackend.chat_body`), so all the
``openai`` client would add is its request machinery: a copy of the options, header merging, URL
parsing and a conversion from httpx's request type to aiohttp's. That costs about 0.8 ms of CPU per
call (measured with cProfile on the safety benchmark: ``_build_request`` 0.84 s for 1,000 calls),
which on one core caps a run near 1,200 calls/s *before* any work of its own. Here a call is: encode
the body once, POST it with headers fixed at start-up, read the bytes. Errors keep the shapes the
session classifies (:func:`~touchstone.judges.providers.base.classify_status` for an HTTP error,
:func:`~touchstone.judges.providers.base.connection_failure` for a failed connection or timeout).

Used for :class:`~touchstone.judges.config.OpenAIConfig` when the HTTP transport is aiohttp; Azure
OpenAI (API versions, Entra ID token refresh) keeps going through the ``openai`` package.
"""

from __future__ import annotations

import asyncio
import json
import sys
import urllib.request
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from touchstone._version import __version__
from touchstone.judges.wire import body_json


class HTTPStatusFailure(Exception):
    """The server answered with an error status: the status, the decoded body (JSON when it is JSON,
    else the text) and the headers, for classification."""

    def __init__(self, status: int, body: Any, headers: Mapping[str, str]) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status
        self.body = body
        self.headers = headers


class DirectSender:
    """POSTs JSON bodies to ``base_url`` + path with fixed headers over one aiohttp session (created
    on first use, in the event loop that sends; keep-alive connections without a count limit, as
    the session's concurrency limit is the bound)."""

    def __init__(self, base_url: str, headers: Mapping[str, str], timeout: float) -> None:
        self.base_url = base_url.rstrip("/")
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"touchstone/{__version__}",
            **headers,
        }
        self.timeout = timeout
        self.proxy = _env_proxy(self.base_url)
        self._session: Any = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._loop is not loop:
            import aiohttp

            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=0, ttl_dns_cache=300),
                timeout=aiohttp.ClientTimeout(
                    total=None, sock_connect=self.timeout, sock_read=self.timeout
                ),
                headers=self.headers,
                # the environment's proxy is looked up once (``proxy``): aiohttp's ``trust_env`` would
                # look it and ~/.netrc up again in a worker thread for every request
                trust_env=False,
                skip_auto_headers=("User-Agent",),
            )
            self._loop = loop
        return self._session

    async def post(self, path: str, body: dict[str, Any], timeout: float) -> tuple[bytes, Mapping[str, str]]:
        """The reply's bytes and headers; raises :class:`HTTPStatusFailure` on an error status and
        aiohttp's or asyncio's own exceptions when no reply came (``timeout`` bounds the whole
        request, connection included)."""
        try:
            data = body_json(body).encode()
        except UnicodeEncodeError:  # a lone surrogate in the data: JSON's ASCII escapes carry it
            data = json.dumps(body).encode()
        if sys.version_info >= (3, 11):
            async with asyncio.timeout(timeout):
                return await self._exchange(path, data)
        return await asyncio.wait_for(self._exchange(path, data), timeout)  # pragma: no cover - 3.10

    async def _exchange(self, path: str, data: bytes) -> tuple[bytes, Mapping[str, str]]:
        async with self._client().post(self.base_url + path, data=data, proxy=self.proxy) as response:
            content = await response.read()
            if response.status >= 400:
                raise HTTPStatusFailure(response.status, _decoded(content), response.headers)
            return content, response.headers

    async def aclose(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            await session.close()


def _decoded(content: bytes) -> Any:
    """An error body as the ``openai`` client exposes it: the JSON value, else the text."""
    text = content.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _env_proxy(url: str) -> str | None:
    """The proxy ``HTTP(S)_PROXY``/``ALL_PROXY`` name for ``url`` unless ``NO_PROXY`` exempts its host
    (the variables the openai client honours)."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy or not parts.hostname or urllib.request.proxy_bypass(parts.hostname):
        return None
    return proxy
