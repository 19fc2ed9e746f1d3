"""OpenAI and Azure OpenAI, and every OpenAI-compatible server (vLLM, llama.cpp, LiteLLM...).

:class:`OpenAIBackend` uses the official ``openai`` package's async clients (``AsyncOpenAI`` for the
OpenAI API and every OpenAI-compatible server, ``AsyncAzureOpenAI`` for Azure OpenAI) with their own
retries off: retries, backoff, rate limits and caching are the session's job.
"""

from __future__ import annotations

import asyncio
import base64
import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from touchstone.errors import ConfigurationError
from touchstone.judges.config import (
    OPENAI_DEFAULT_BASE_URL,
    AzureOpenAIConfig,
    JudgeSettings,
    ModelConfiguration,
    OpenAIConfig,
)
from touchstone.judges.errors import FatalProviderError, TransientError, redact
from touchstone.judges.providers.base import (
    BackendBase,
    ChatRequest,
    Response,
    classify_status,
    connection_failure,
    exhausted_pause,
)
from touchstone.judges.providers.direct_http import DirectSender, HTTPStatusFailure
from touchstone.judges.providers.registry import register_provider

AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
CONNECTIONS_PER_CLIENT = 16


def _url_credentials(url: str) -> tuple[str, str | None]:
    """``url`` without ``user:password@`` and the ``Authorization`` value those credentials make
    (None when the URL has none). aiohttp refuses a URL with credentials beside an Authorization
    header, so they travel as a header of their own."""
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, host = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    token = base64.b64encode(f"{unquote(user)}:{unquote(password)}".encode()).decode("ascii")
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment)), f"Basic {token}"


@register_provider("openai", "azure_openai")
class OpenAIBackend(BackendBase):
    """Requests through ``openai.AsyncOpenAI`` / ``openai.AsyncAzureOpenAI``."""

    def __init__(self, config: ModelConfiguration, settings: JudgeSettings) -> None:
        import openai

        super().__init__(settings, host=urlsplit(config.endpoint()).netloc.rpartition("@")[2])
        self._openai = openai
        self._secret = config.resolved_api_key()
        self._tokens: list[str] = []  # the latest Entra ID tokens handed out: redacted like the key
        self.sender: DirectSender | None = None  # plain OpenAI-compatible servers over aiohttp
        headers = dict(getattr(config, "extra_headers", None) or {})
        common: dict[str, Any] = {
            "max_retries": 0,
            "timeout": settings.timeout,
            "default_headers": headers or None,
        }
        self.transport = resolve_transport(settings.http_transport)
        httpx = _httpx_module(importlib.import_module("openai._base_client"))
        direct = self.transport == "aiohttp" and isinstance(config, OpenAIConfig)
        if self.transport == "aiohttp" and not direct:
            # One pool for all requests; keep every connection the limit allows alive between calls.
            common["http_client"] = openai.DefaultAioHttpClient(
                timeout=settings.timeout,
                limits=httpx.Limits(
                    max_connections=None, max_keepalive_connections=max(settings.concurrency, 20)
                ),
            )
        factory: Callable[[], Any]
        if isinstance(config, AzureOpenAIConfig):
            provider = None
            if config.azure_ad_token_provider is not None or config.credential is not None:
                provider = self._entra_tokens(config.azure_ad_token_provider, config.credential)
            if provider is None and not self._secret:
                raise ConfigurationError(
                    "no Azure OpenAI credentials: set AZURE_OPENAI_API_KEY, or pass api_key, "
                    "azure_ad_token_provider or credential"
                )
            endpoint, version, key = config.endpoint(), config.resolved_api_version(), self._secret

            def factory() -> Any:
                return openai.AsyncAzureOpenAI(
                    azure_endpoint=endpoint,
                    api_version=version,
                    api_key=None if provider is not None else key,
                    azure_ad_token_provider=provider,
                    **common,
                )

        elif isinstance(config, OpenAIConfig):
            key = self._secret
            if not key:
                if config.endpoint().rstrip("/") == OPENAI_DEFAULT_BASE_URL:
                    raise ConfigurationError(
                        "no OpenAI API key: set OPENAI_API_KEY or pass api_key "
                        "(or base_url for an OpenAI-compatible server)"
                    )
                key = "no-key"  # local OpenAI-compatible servers usually need none
            base_url, basic = _url_credentials(config.endpoint())
            if basic is not None:  # user:password@ in the URL is HTTP Basic auth, as curl and httpx read it
                common["default_headers"] = {**headers, "Authorization": basic}
                self._tokens.append(basic.split(" ", 1)[1])
            organization = config.organization
            if direct:
                # the body is built here already: send it straight, without the SDK's request machinery
                fixed = {"Authorization": f"Bearer {key}", **(common["default_headers"] or {})}
                if organization:
                    fixed["OpenAI-Organization"] = organization
                self.sender = DirectSender(base_url, fixed, settings.timeout)

            def factory() -> Any:
                return openai.AsyncOpenAI(api_key=key, base_url=base_url, organization=organization, **common)

        else:  # pragma: no cover - adapters build their own backends
            raise ConfigurationError(f"no OpenAI backend for {type(config).__name__}")
        # httpx's connection pool scans all its connections for every request; at high concurrency that
        # costs more CPU than the request itself, so requests are spread over a few smaller clients.
        # aiohttp's pool does not, so one client serves all.
        shards = (
            1
            if self.transport == "aiohttp"
            else max(1, min(16, -(-settings.concurrency // CONNECTIONS_PER_CLIENT)))
        )
        self.clients: list[Any] = [] if self.sender is not None else [factory() for _ in range(shards)]
        self.client = self.clients[0] if self.clients else None
        self._next = 0
        self._raw_type = httpx.Response

    def _entra_tokens(
        self, provider: Callable[[], Any] | None, credential: Any
    ) -> Callable[[], Awaitable[str]]:
        """The token provider given to ``AsyncAzureOpenAI`` (called before every request, so tokens
        are refreshed as the user's provider or credential refreshes them): ``provider()`` or
        ``credential.get_token(AZURE_SCOPE).token``, sync or async. A token that cannot be had stops
        the run with the cause (every call would fail the same way) instead of failing each row."""
        source = "azure_ad_token_provider" if provider is not None else "credential.get_token"

        async def token() -> str:
            try:
                value = provider() if provider is not None else credential.get_token(AZURE_SCOPE)
                if inspect.isawaitable(value):
                    value = await value
                if provider is None:
                    value = value.token
            except Exception as exc:
                detail = redact(str(exc)[:300], [self._secret, *self._tokens])
                raise FatalProviderError(
                    f"could not get an Entra ID token from {source}: {type(exc).__name__}: {detail}"
                ) from None
            if not isinstance(value, str) or not value:
                raise FatalProviderError(f"{source} returned no Entra ID token (expected a non-empty string)")
            if value not in self._tokens:
                self._tokens = [*self._tokens[-3:], value]
            return value

        return token

    def _pick(self) -> Any:
        self._next = (self._next + 1) % len(self.clients)
        return self.clients[self._next]

    def chat_body(self, model: str, request: ChatRequest) -> dict[str, Any]:
        """A ``/chat/completions`` body: optional parameters the server refused are left out;
        reasoning models get ``max_completion_tokens`` and no temperature; a JSON schema goes in
        the negotiated structured-output mode."""
        unsupported = self.unsupported
        body: dict[str, Any] = {"model": model, "messages": request["messages"]}
        if request["n"] != 1:
            body["n"] = request["n"]
        if request["temperature"] is not None and "temperature" not in unsupported:
            body["temperature"] = request["temperature"]
        if request["max_tokens"] is not None:
            use_completion = request["reasoning"] or "max_tokens" in unsupported
            if use_completion and "max_completion_tokens" in unsupported:
                pass  # neither is accepted: let the server decide the length
            elif use_completion:
                body["max_completion_tokens"] = request["max_tokens"]
            else:
                body["max_tokens"] = request["max_tokens"]
        if request["seed"] is not None and "seed" not in unsupported:
            body["seed"] = request["seed"]
        if request["logprobs"] and "logprobs" not in unsupported:
            body["logprobs"] = True
            if request["top_logprobs"] and "top_logprobs" not in unsupported:
                body["top_logprobs"] = request["top_logprobs"]
        if request["json_schema"] is not None:
            fmt = self.structured.response_format(request["json_schema"], request["schema_name"])
            if fmt is not None:
                body["response_format"] = fmt
        return body

    async def chat(self, body: dict[str, Any], timeout: float) -> Response:
        return await self._send("/chat/completions", body, timeout)

    async def completions(self, model: str, prompts: list[str], timeout: float) -> Response:
        body = {
            "model": model,
            "prompt": prompts,
            "max_tokens": 0,
            "echo": True,
            "logprobs": 0,
            "temperature": 0,
        }
        return await self._send("/completions", body, timeout)

    async def embed(self, model: str, texts: list[str], timeout: float) -> Response:
        return await self._send("/embeddings", {"model": model, "input": texts}, timeout)

    async def _send(self, path: str, body: dict[str, Any], timeout: float) -> Response:
        if self.sender is not None:
            return await self._send_direct(self.sender, path, body, timeout)
        openai = self._openai
        try:
            # ``post`` sends the body as given (the typed resource methods re-walk every message,
            # which costs milliseconds per call); the client's timeout covers connect/read/write
            # and wait_for bounds the whole request.
            raw = await _bounded(self._pick().post(path, cast_to=self._raw_type, body=body), timeout + 1.0)
            content = raw.content
            headers = raw.headers
        except openai.APIStatusError as exc:
            failure = classify_status(exc.status_code, exc.body, exc.response.headers, body)
            failure.message = redact(failure.message, [self._secret, *self._tokens])
            raise failure from None
        except (asyncio.TimeoutError, openai.APITimeoutError, openai.APIConnectionError) as exc:
            # aiohttp's stack reports a refused connection as a connect *timeout*: the causes tell
            raise connection_failure(exc, self.host, timeout) from None
        return _decoded_reply(content, headers)

    async def _send_direct(
        self, sender: DirectSender, path: str, body: dict[str, Any], timeout: float
    ) -> Response:
        import aiohttp  # installed: a sender exists only on the aiohttp transport

        try:
            content, headers = await sender.post(path, body, timeout + 1.0)
        except HTTPStatusFailure as exc:
            failure = classify_status(exc.status, exc.body, exc.headers, body)
            failure.message = redact(failure.message, [self._secret, *self._tokens])
            raise failure from None
        except (asyncio.TimeoutError, OSError, aiohttp.ClientError) as exc:
            raise connection_failure(exc, self.host, timeout) from None
        return _decoded_reply(content, headers)

    async def aclose(self) -> None:
        if self.sender is not None:
            await self.sender.aclose()
        for client in self.clients:
            await client.close()


def _decoded_reply(content: bytes, headers: Any) -> Response:
    try:
        data = json.loads(content)
    except ValueError:
        raise TransientError("malformed JSON in the reply") from None
    if not isinstance(data, dict):
        raise TransientError("malformed reply (not a JSON object)")
    return Response(data, exhausted_pause(headers))


async def _bounded(call: Awaitable[Any], seconds: float) -> Any:
    """``await call`` for at most ``seconds`` (``asyncio.timeout`` where available: no extra task)."""
    if sys.version_info >= (3, 11):
        async with asyncio.timeout(seconds):
            return await call
    return await asyncio.wait_for(call, seconds)  # pragma: no cover - Python 3.10


def resolve_transport(choice: str) -> str:
    """``"aiohttp"`` or ``"httpx"`` for a :attr:`JudgeSettings.http_transport` choice; ``"auto"``
    follows ``$TOUCHSTONE_HTTP_TRANSPORT`` when it is set."""
    if choice == "auto":
        choice = os.environ.get("TOUCHSTONE_HTTP_TRANSPORT", "auto").strip().lower() or "auto"
        if choice not in ("auto", "aiohttp", "httpx"):
            raise ConfigurationError(
                f"TOUCHSTONE_HTTP_TRANSPORT must be auto, aiohttp or httpx, got {choice!r}"
            )
    if choice == "httpx":
        return "httpx"
    import openai

    available = importlib.util.find_spec("aiohttp") is not None and hasattr(openai, "DefaultAioHttpClient")
    if choice == "aiohttp" and not available:
        raise ConfigurationError(
            "http_transport='aiohttp' needs aiohttp and an openai release with DefaultAioHttpClient: "
            "pip install -U 'openai[aiohttp]'"
        )
    return "aiohttp" if available else "httpx"


def _httpx_module(base: Any) -> Any:
    """The httpx module the installed ``openai`` is built on (``httpx2`` in recent releases)."""
    return getattr(base, "httpx2", None) or base.httpx
