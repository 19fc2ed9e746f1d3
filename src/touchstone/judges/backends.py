"""Transport to a judge provider: send one request, return its JSON, or raise a classified failure.

:class:`OpenAIBackend` uses the official ``openai`` package's async clients (``AsyncOpenAI`` for the
OpenAI API and every OpenAI-compatible server, ``AsyncAzureOpenAI`` for Azure OpenAI) with their own
retries off: retries, backoff, rate limits and caching are the session's job. Other providers plug
in through :mod:`touchstone.judges.adapters` with the same small interface (:class:`Backend`).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Protocol
from urllib.parse import urlsplit

from touchstone.errors import ConfigurationError
from touchstone.judges.config import (
    OPENAI_DEFAULT_BASE_URL,
    AzureOpenAIModelConfiguration,
    JudgeSettings,
    ModelConfiguration,
    OpenAIModelConfiguration,
)
from touchstone.judges.errors import redact
from touchstone.judges.limiter import AdaptiveLimiter, TokenBucket

AZURE_SCOPE = "https://cognitiveservices.azure.com/.default"
CONNECTIONS_PER_CLIENT = 16

# Kinds of failure, and what the session does with them
RATE_LIMIT = "rate_limit"  # 429: back off, halve concurrency, retry
QUOTA = "quota"  # 429 insufficient_quota: stop the run
TRANSIENT = "transient"  # 5xx, timeout, dropped connection, malformed body: retry with backoff
UNSUPPORTED = "unsupported"  # 400 naming an optional parameter: send again without it
ROW = "row"  # 400 about this request's content (content filter, context too long): fail this row
FATAL = "fatal"  # 400/401/403/404...: every call would fail the same way: stop the run


@dataclass
class Failure(Exception):
    """A classified failed request."""

    kind: str
    message: str
    status: int | None = None
    retry_after: float | None = None
    param: str | None = None

    def __str__(self) -> str:
        return self.message


STRUCTURED_MODES = ("json_schema", "json_object", "text")
"""How a JSON schema can be asked of a server, best first: OpenAI's ``json_schema`` response format;
``json_object`` with the schema beside it (the dialect of llama.cpp servers, which constrain the
output with a grammar built from it); plain text parsed tolerantly."""


class StructuredOutput:
    """Which structured-output mode one server takes, negotiated once per backend (server and key).

    Until it is decided, only one schema-constrained request is in flight (the *probe*); the others
    wait for it, so a server that rejects ``json_schema`` costs one rejected request per mode, not
    one per row. A reply decides the mode it was sent with; a rejection naming the response format
    moves to the next mode (:meth:`downgrade`)."""

    __slots__ = ("_probe", "decided", "mode")

    def __init__(self, mode: str = "json_schema", *, decided: bool = False) -> None:
        self.mode = mode
        self.decided = decided
        self._probe: asyncio.Future[None] | None = None

    def fix(self, mode: str) -> None:
        """Decide ``mode`` without asking the server (a provider known to take only this one)."""
        self.mode, self.decided = mode, True

    async def acquire(self) -> bool:
        """Wait until the mode is decided, or until this caller may probe: True when it must send
        the probe and then call :meth:`release`."""
        while not self.decided:
            probe = self._probe
            if probe is None:
                self._probe = asyncio.get_running_loop().create_future()
                return True
            await asyncio.shield(probe)
        return False

    def release(self) -> None:
        """The probe ended (decided or not: an undecided mode lets the next waiter probe)."""
        probe, self._probe = self._probe, None
        if probe is not None and not probe.done():
            probe.set_result(None)

    def downgrade(self, rejected: str) -> str:
        """``rejected`` was refused by the server: the next mode (unchanged when another request
        already moved past it). Plain text is final."""
        if self.mode == rejected and rejected != "text":
            self.mode = STRUCTURED_MODES[STRUCTURED_MODES.index(rejected) + 1]
            if self.mode == "text":
                self.decided = True
        return self.mode

    def response_format(self, schema: dict[str, Any], name: str) -> dict[str, Any] | None:
        """The ``response_format`` body value for the current mode (None: send none)."""
        if self.mode == "json_schema":
            return {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": True}}
        if self.mode == "json_object":
            return {"type": "json_object", "schema": schema}
        return None


@dataclass
class Response:
    """A successful reply: its decoded JSON body and the rate-limit hints in its headers."""

    data: dict[str, Any]
    pause: float | None = None


class Backend(Protocol):
    """What the session needs from a provider."""

    limiter: AdaptiveLimiter
    rpm: TokenBucket | None
    tpm: TokenBucket | None
    unsupported: set[str]
    host: str
    structured: StructuredOutput

    async def chat(self, body: dict[str, Any], timeout: float) -> Response: ...

    async def embed(self, model: str, texts: list[str], timeout: float) -> Response: ...

    async def aclose(self) -> None: ...


@dataclass
class BackendBase:
    """Limits shared by every request to one endpoint and key."""

    settings: JudgeSettings
    host: str = ""
    limiter: AdaptiveLimiter = field(init=False)
    rpm: TokenBucket | None = field(init=False, default=None)
    tpm: TokenBucket | None = field(init=False, default=None)
    unsupported: set[str] = field(init=False, default_factory=set)
    structured: StructuredOutput = field(init=False, default_factory=lambda: StructuredOutput())

    def __post_init__(self) -> None:
        self.limiter = AdaptiveLimiter(self.settings.concurrency, adaptive=self.settings.adaptive)
        self.rpm = TokenBucket(self.settings.rpm) if self.settings.rpm else None
        self.tpm = TokenBucket(self.settings.tpm) if self.settings.tpm else None


# --------------------------------------------------------------------------- headers
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h)")


def parse_duration(text: str) -> float | None:
    """``x-ratelimit-reset-*`` values such as ``1s``, ``6m0s``, ``20ms``, ``1.5`` -> seconds."""
    text = text.strip()
    try:
        return float(text)
    except ValueError:
        pass
    total, found = 0.0, False
    for number, unit in _DURATION.findall(text):
        found = True
        total += float(number) * {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}[unit]
    return total if found else None


def retry_after_seconds(headers: Any) -> float | None:
    """How long the server asks us to wait: ``retry-after-ms``, ``retry-after`` (seconds or an HTTP
    date), else the longest ``x-ratelimit-reset-requests`` / ``x-ratelimit-reset-tokens``."""
    if headers is None:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value:
        try:
            return max(0.0, float(value))
        except ValueError:
            try:
                return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
            except (TypeError, ValueError):
                pass
    resets = [parse_duration(headers.get(h) or "") for h in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")]
    known = [r for r in resets if r is not None]
    return max(known) if known else None


def exhausted_pause(headers: Any) -> float | None:
    """On a successful reply: when the server says no requests or tokens remain in this window, the
    time until it resets (new requests wait for it)."""
    pauses = []
    for kind in ("requests", "tokens"):
        remaining = headers.get(f"x-ratelimit-remaining-{kind}")
        if remaining is not None and remaining.strip() in ("0", "0.0"):
            reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}") or "")
            if reset:
                pauses.append(reset)
    return max(pauses) if pauses else None


# --------------------------------------------------------------------------- classification
_ROW_CODES = {"content_filter", "context_length_exceeded", "string_above_max_length", "invalid_prompt"}
_OPTIONAL_PARAMS = (
    "response_format",
    "top_logprobs",
    "logprobs",
    "seed",
    "temperature",
    "top_p",
    "max_completion_tokens",
    "max_tokens",
)
_STATUS_CAUSE = {
    400: "the request was rejected as invalid",
    401: "authentication failed (check the API key or token)",
    403: "permission denied (the key may not have access to this model or resource)",
    404: "not found (check the model or deployment name, the base URL and the API version)",
    422: "the request was rejected as invalid",
}


_FORMAT_WORDS = re.compile(r"response_format|json_schema|json_object|structured output|\bschema\b")


def _names_response_format(sent: dict[str, Any], message: str, param: Any) -> bool:
    """A rejection of a request carrying ``response_format`` that names it (or the schema): the
    server does not take this structured-output mode. llama.cpp servers answer HTTP 500 here."""
    if "response_format" not in sent:
        return False
    return param == "response_format" or _FORMAT_WORDS.search(message.lower()) is not None


def classify_status(status: int, body: Any, headers: Any, sent: dict[str, Any] | None) -> Failure:
    """Turn an HTTP error status and body into a :class:`Failure`."""
    err = body.get("error", body) if isinstance(body, dict) else {}
    if not isinstance(err, dict):
        err = {"message": str(err)}
    message = str(err.get("message") or body or "").strip()[:500]
    code = str(err.get("code") or err.get("type") or "")
    param = err.get("param")
    wait = retry_after_seconds(headers)
    if status in (400, 422, 500) and code not in _ROW_CODES and sent is not None and _names_response_format(
        sent, message, param
    ):
        kind = sent["response_format"].get("type", "?") if isinstance(sent["response_format"], dict) else "?"
        return Failure(UNSUPPORTED, f"the server rejected response_format {kind} (HTTP {status}): {message}",
                       status, param="response_format")
    if status == 429:
        if code == "insufficient_quota" or "exceeded your current quota" in message.lower():
            return Failure(QUOTA, f"quota exhausted: {message}", status)
        return Failure(RATE_LIMIT, f"rate limited (HTTP 429): {message}", status, wait)
    if status >= 500 or status in (408, 409, 425):
        return Failure(TRANSIENT, f"server error HTTP {status}: {message}", status, wait)
    if status in (400, 413, 422):
        lowered = message.lower()
        if code in _ROW_CODES or "content management policy" in lowered or "maximum context length" in lowered:
            return Failure(ROW, f"HTTP {status} {code or ''}: {message}".replace("  ", " "), status)
        if sent is not None:
            for name in _OPTIONAL_PARAMS:
                named = param == name or re.search(rf"(?<![a-z_]){name}(?![a-z_])", lowered)
                if name in sent and named:
                        return Failure(UNSUPPORTED, f"the server does not support {name}: {message}", status, param=name)
            if "response_format" in sent and ("json_schema" in lowered or "structured output" in lowered):
                return Failure(UNSUPPORTED, f"the server does not support json_schema: {message}", status,
                               param="response_format")
        if status == 413:
            return Failure(ROW, f"HTTP 413 request too large: {message}", status)
    cause = _STATUS_CAUSE.get(status, f"HTTP {status}")
    return Failure(FATAL, f"HTTP {status}, {cause}: {message}" if message else f"HTTP {status}, {cause}", status)


# --------------------------------------------------------------------------- OpenAI and Azure OpenAI
class OpenAIBackend(BackendBase):
    """Requests through ``openai.AsyncOpenAI`` / ``openai.AsyncAzureOpenAI``."""

    def __init__(self, config: ModelConfiguration, settings: JudgeSettings) -> None:
        import openai

        super().__init__(settings, host=urlsplit(config.endpoint()).netloc)
        self._openai = openai
        self._secret = config.resolved_api_key()
        self._tokens: list[str] = []  # the latest Entra ID tokens handed out: redacted like the key
        headers = dict(getattr(config, "extra_headers", None) or {})
        common: dict[str, Any] = {"max_retries": 0, "timeout": settings.timeout, "default_headers": headers or None}
        self.transport = resolve_transport(settings.http_transport)
        httpx = _httpx_module(importlib.import_module("openai._base_client"))
        if self.transport == "aiohttp":
            # One pool for all requests; keep every connection the limit allows alive between calls.
            common["http_client"] = openai.DefaultAioHttpClient(
                timeout=settings.timeout,
                limits=httpx.Limits(
                    max_connections=None, max_keepalive_connections=max(settings.concurrency, 20)
                ),
            )
        factory: Callable[[], Any]
        if isinstance(config, AzureOpenAIModelConfiguration):
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

        elif isinstance(config, OpenAIModelConfiguration):
            key = self._secret
            if not key:
                if config.endpoint().rstrip("/") == OPENAI_DEFAULT_BASE_URL:
                    raise ConfigurationError(
                        "no OpenAI API key: set OPENAI_API_KEY or pass api_key "
                        "(or base_url for an OpenAI-compatible server)"
                    )
                key = "no-key"  # local OpenAI-compatible servers usually need none
            base_url, organization = config.endpoint(), config.organization

            def factory() -> Any:
                return openai.AsyncOpenAI(api_key=key, base_url=base_url, organization=organization, **common)

        else:  # pragma: no cover - adapters build their own backends
            raise ConfigurationError(f"no OpenAI backend for {type(config).__name__}")
        # httpx's connection pool scans all its connections for every request; at high concurrency that
        # costs more CPU than the request itself, so requests are spread over a few smaller clients.
        # aiohttp's pool does not, so one client serves all.
        shards = 1 if self.transport == "aiohttp" else max(1, min(16, -(-settings.concurrency // CONNECTIONS_PER_CLIENT)))
        self.clients: list[Any] = [factory() for _ in range(shards)]
        self.client = self.clients[0]
        self._next = 0
        self._raw_type = httpx.Response

    def _entra_tokens(self, provider: Callable[[], Any] | None, credential: Any) -> Callable[[], Awaitable[str]]:
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
                raise Failure(FATAL, f"could not get an Entra ID token from {source}: {type(exc).__name__}: {detail}") from None
            if not isinstance(value, str) or not value:
                raise Failure(FATAL, f"{source} returned no Entra ID token (expected a non-empty string)")
            if value not in self._tokens:
                self._tokens = [*self._tokens[-3:], value]
            return value

        return token

    def _pick(self) -> Any:
        self._next = (self._next + 1) % len(self.clients)
        return self.clients[self._next]

    async def chat(self, body: dict[str, Any], timeout: float) -> Response:
        return await self._send("/chat/completions", body, timeout)

    async def embed(self, model: str, texts: list[str], timeout: float) -> Response:
        return await self._send("/embeddings", {"model": model, "input": texts}, timeout)

    async def _send(self, path: str, body: dict[str, Any], timeout: float) -> Response:
        openai = self._openai
        try:
            # ``post`` sends the body as given (the typed resource methods re-walk every message,
            # which costs milliseconds per call); the client's timeout covers connect/read/write
            # and wait_for bounds the whole request.
            raw = await _bounded(self._pick().post(path, cast_to=self._raw_type, body=body), timeout + 1.0)
            content = raw.content
            headers = raw.headers
        except (asyncio.TimeoutError, openai.APITimeoutError):
            raise Failure(TRANSIENT, f"timed out after {timeout:g} s") from None
        except openai.APIStatusError as exc:
            failure = classify_status(exc.status_code, exc.body, exc.response.headers, body)
            failure.message = redact(failure.message, [self._secret, *self._tokens])
            raise failure from None
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc.__context__
            detail = f" ({type(cause).__name__})" if cause is not None else ""
            raise Failure(TRANSIENT, f"connection error{detail}") from None
        try:
            data = json.loads(content)
        except ValueError:
            raise Failure(TRANSIENT, "malformed JSON in the reply") from None
        if not isinstance(data, dict):
            raise Failure(TRANSIENT, "malformed reply (not a JSON object)")
        return Response(data, exhausted_pause(headers))

    async def aclose(self) -> None:
        for client in self.clients:
            await client.close()


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


def make_backend(config: ModelConfiguration, settings: JudgeSettings) -> Backend:
    """The backend for a configuration (adapters for other providers)."""
    if isinstance(config, (OpenAIModelConfiguration, AzureOpenAIModelConfiguration)):
        return OpenAIBackend(config, settings)
    from touchstone.judges.adapters import make_adapter_backend

    return make_adapter_backend(config, settings)
