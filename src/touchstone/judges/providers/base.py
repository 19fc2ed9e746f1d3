"""What every judge provider shares: the :class:`Backend` interface the session calls, the limits held
per endpoint and key, structured-output negotiation state, rate-limit header parsing, and the
classification of HTTP errors into the :mod:`touchstone.judges.errors` tree.

A backend builds its own request bodies from a provider-neutral :class:`ChatRequest` (so the session
knows nothing of any provider's wire format), sends them, and returns the decoded reply in OpenAI's
shape or raises a :class:`~touchstone.judges.errors.ProviderError` subclass.
"""

from __future__ import annotations

import asyncio
import errno
import re
import socket
import time
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from typing import Any, Protocol, TypedDict

from touchstone.judges.config import JudgeSettings
from touchstone.judges.errors import (
    FatalProviderError,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    RowRejected,
    TransientError,
    UnsupportedParameter,
)
from touchstone.judges.limiter import AdaptiveLimiter, TokenBucket

STRUCTURED_MODES = ("json_schema", "json_object", "text")
"""How a JSON schema can be asked of a server, best first: OpenAI's ``json_schema`` response format;
``json_object`` with the schema beside it (the dialect of llama.cpp servers, which constrain the
output with a grammar built from it); plain text parsed tolerantly."""


class ChatRequest(TypedDict):
    """One chat call as the session sees it, before any provider's wire format (also the cache key's
    content, so it holds only what changes the reply)."""

    messages: list[dict[str, str]]
    json_schema: dict[str, Any] | None
    schema_name: str
    logprobs: bool
    top_logprobs: int | None
    max_tokens: int | None
    temperature: float | None
    n: int
    seed: int | None
    reasoning: bool


PROBE_PATIENCE = 1.0
"""Seconds a probe may stay unanswered before one more caller probes beside it (then twice as long
before the next): a hung first request does not hold every other one up, and a slow server meets
only a few extra probes."""


class Gate:
    """Lets one caller through (the *probe*) until :attr:`open`; the others wait for the probe to end
    and then either pass (open) or one of them probes next. Once open, passing costs an attribute
    read: callers check :attr:`open` before awaiting :meth:`acquire`. A probe unanswered for
    :data:`PROBE_PATIENCE` seconds lets one more caller probe (patience doubling each time)."""

    __slots__ = ("_extras", "_probe", "_started", "open")

    def __init__(self, *, open: bool = False) -> None:
        self.open = open
        self._probe: asyncio.Future[None] | None = None
        self._started = 0.0
        self._extras = 0

    async def acquire(self) -> bool:
        """Wait until open, or until this caller may probe: True when it must probe and then call
        :meth:`release`."""
        while not self.open:
            probe = self._probe
            if probe is None:
                self._probe = asyncio.get_running_loop().create_future()
                self._started = time.monotonic()
                return True
            due = self._started + PROBE_PATIENCE * 2**self._extras - time.monotonic()
            if due <= 0:  # the probe is stalled: one more beside it
                self._extras += 1
                return True
            await asyncio.wait({probe}, timeout=due)
        return False

    def release(self) -> None:
        """The probe ended (successful or not: while still closed, the next waiter probes)."""
        probe, self._probe = self._probe, None
        if probe is not None and not probe.done():
            probe.set_result(None)


class StructuredOutput(Gate):
    """Which structured-output mode one server takes, negotiated once per backend (server and key).

    Until it is decided (the gate is open), only one schema-constrained request is in flight; the
    others wait for it, so a server that rejects ``json_schema`` costs one rejected request per mode,
    not one per row. A reply decides the mode it was sent with; a rejection naming the response
    format moves to the next mode (:meth:`downgrade`)."""

    __slots__ = ("mode",)

    def __init__(self, mode: str = "json_schema", *, decided: bool = False) -> None:
        super().__init__(open=decided)
        self.mode = mode

    @property
    def decided(self) -> bool:
        return self.open

    def fix(self, mode: str) -> None:
        """Decide ``mode`` without asking the server (a provider known to take only this one)."""
        self.mode, self.open = mode, True

    def downgrade(self, rejected: str) -> str:
        """``rejected`` was refused by the server: the next mode (unchanged when another request
        already moved past it). Plain text is final."""
        if self.mode == rejected and rejected in STRUCTURED_MODES[:-1]:
            self.mode = STRUCTURED_MODES[STRUCTURED_MODES.index(rejected) + 1]
            if self.mode == "text":
                self.open = True
        return self.mode

    def response_format(self, schema: dict[str, Any], name: str) -> dict[str, Any] | None:
        """OpenAI's ``response_format`` body value for the current mode (None: send none)."""
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
    """What the session needs from a provider.

    ``contact`` is open once any request to this backend succeeded (until then the session sends one
    request at a time, so a server that fails every call is found out in a few requests);
    ``structured`` the negotiated structured-output mode; ``unsupported`` the optional parameters the
    server refused; ``first_failure`` and ``first_failures`` the identical server error the first
    calls met and how many times; ``confirmed`` whether a request succeeded in this run (``contact``
    may also be open from what an earlier run in this process learnt: see
    :mod:`touchstone.judges.known_servers`); ``learns``: whether what this backend learns about its
    server is worth remembering for later runs (False for a backend that meets no server)."""

    learns: bool
    limiter: AdaptiveLimiter
    rpm: TokenBucket | None
    tpm: TokenBucket | None
    unsupported: set[str]
    host: str
    structured: StructuredOutput
    contact: Gate
    confirmed: bool
    first_failure: str | None
    first_failures: int

    def chat_body(self, model: str, request: ChatRequest) -> dict[str, Any]:
        """The request body for ``request`` in this provider's format (given ``unsupported`` and the
        structured-output mode); passed back to :meth:`chat` and to error classification."""
        ...

    async def chat(self, body: dict[str, Any], timeout: float) -> Response: ...

    async def embed(self, model: str, texts: list[str], timeout: float) -> Response: ...

    async def completions(self, model: str, prompts: list[str], timeout: float) -> Response:
        """Prompt log-probabilities (``echo``) of ``prompts``, nothing generated, in OpenAI's
        ``text_completion`` shape."""
        ...

    async def aclose(self) -> None: ...


@dataclass
class BackendBase:
    """Limits and negotiated state shared by every request to one endpoint and key."""

    learns = True  # a class attribute, not a field: a backend kind decides it
    settings: JudgeSettings
    host: str = ""
    limiter: AdaptiveLimiter = field(init=False)
    rpm: TokenBucket | None = field(init=False, default=None)
    tpm: TokenBucket | None = field(init=False, default=None)
    unsupported: set[str] = field(init=False, default_factory=set)
    structured: StructuredOutput = field(init=False, default_factory=StructuredOutput)
    contact: Gate = field(init=False, default_factory=Gate)
    confirmed: bool = field(init=False, default=False)
    first_failure: str | None = field(init=False, default=None)
    first_failures: int = field(init=False, default=0)

    def __post_init__(self) -> None:
        self.limiter = AdaptiveLimiter(self.settings.concurrency, adaptive=self.settings.adaptive)
        self.rpm = TokenBucket(self.settings.rpm) if self.settings.rpm else None
        self.tpm = TokenBucket(self.settings.tpm) if self.settings.tpm else None

    async def completions(self, model: str, prompts: list[str], timeout: float) -> Response:
        raise FatalProviderError(
            f"{type(self).__name__} has no completions (prompt log-probabilities) endpoint"
        )


class Unreachable(TransientError):
    """The server could not be reached at all (connection refused, unknown host, no route): retried
    like any transient fault, and when a backend's first calls all meet it the run stops."""


def connection_failure(exc: BaseException, host: str, timeout: float) -> TransientError:
    """What a failed connection or a client-side timeout really was, from the exception's causes:
    a refused connection or an unknown host is :class:`Unreachable` and says so (an HTTP stack may
    report it as a connect *timeout*); a read that outlasted ``timeout`` says it timed out."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError) or (
            isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
        ):
            return Unreachable(f"connection refused by {host} (is the server running on that port?)")
        if isinstance(cause, socket.gaierror):
            return Unreachable(f"cannot resolve the host of {host} ({cause.strerror or cause})")
        if isinstance(cause, OSError) and not isinstance(cause, TimeoutError) and cause.errno is not None:
            return Unreachable(f"cannot connect to {host}: {cause.strerror or cause}")
        cause = cause.__cause__ or cause.__context__
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)) or "timeout" in type(exc).__name__.lower():
        return TransientError(f"timed out after {timeout:g} s")
    name = type(exc.__cause__ or exc.__context__ or exc).__name__
    return TransientError(f"connection error ({name})")


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
    resets = [
        parse_duration(headers.get(h) or "")
        for h in ("x-ratelimit-reset-requests", "x-ratelimit-reset-tokens")
    ]
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


def classify_status(status: int, body: Any, headers: Any, sent: dict[str, Any] | None) -> ProviderError:
    """Turn an HTTP error status and body into a :class:`~touchstone.judges.errors.ProviderError`
    (``sent``: the request body, to tell which optional parameter a 400 names)."""
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
        fmt = sent["response_format"]
        kind = str(fmt.get("type", "?")) if isinstance(fmt, dict) else "?"
        return UnsupportedParameter(f"the server rejected response_format {kind} (HTTP {status}): {message}",
                                    status, param="response_format", value=kind)
    if status == 429:
        if code == "insufficient_quota" or "exceeded your current quota" in message.lower():
            return QuotaExhausted(f"quota exhausted: {message}", status)
        return RateLimited(f"rate limited (HTTP 429): {message}", status, retry_after=wait)
    if status >= 500 or status in (408, 409, 425):
        return TransientError(f"server error HTTP {status}: {message}", status, retry_after=wait)
    if status in (400, 413, 422):
        lowered = message.lower()
        if (
            code in _ROW_CODES
            or "content management policy" in lowered
            or "maximum context length" in lowered
        ):
            return RowRejected(f"HTTP {status} {code or ''}: {message}".replace("  ", " "), status)
        if sent is not None:
            for name in _OPTIONAL_PARAMS:
                named = param == name or re.search(rf"(?<![a-z_]){name}(?![a-z_])", lowered)
                if name in sent and named:
                    return UnsupportedParameter(
                        f"the server does not support {name}: {message}", status, param=name
                    )
        if status == 413:
            return RowRejected(f"HTTP 413 request too large: {message}", status)
    cause = _STATUS_CAUSE.get(status, f"HTTP {status}")
    return FatalProviderError(
        f"HTTP {status}, {cause}: {message}" if message else f"HTTP {status}, {cause}", status
    )
