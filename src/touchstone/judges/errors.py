"""Errors of the judge machinery, and scrubbing of secrets from anything shown to a user."""

from __future__ import annotations

import re
from collections.abc import Iterable

from touchstone._exceptions import ErrorBlame, ErrorCategory
from touchstone._redact import redact_urls
from touchstone.errors import RunAbortedError, TouchstoneError

__all__ = [
    "FatalProviderError",
    "JudgeCallError",
    "ProviderError",
    "QuotaExhausted",
    "RateLimited",
    "RowRejected",
    "RunAbortedError",
    "TransientError",
    "UnsupportedParameter",
    "redact",
]


class ProviderError(TouchstoneError):
    """A request to a judge provider failed; the subclass says what the session does about it.

    ``kind`` (a class constant) is the error kind a row's score records when the call fails for
    good; ``status`` the HTTP status when there was one; ``message`` is shown to the user (secrets
    are redacted by the backend that raises it). An ``EvaluationException`` of category
    ``FAILED_EXECUTION`` (``SERVICE_UNAVAILABLE`` for the retryable kinds)."""

    kind: str = "provider"
    default_category = ErrorCategory.FAILED_EXECUTION

    def __init__(self, message: str, status: int | None = None, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after


class RateLimited(ProviderError):
    """HTTP 429 (or a provider's "overloaded"): back off as the server asks, lower concurrency, retry."""

    kind = "rate_limit"
    default_category = ErrorCategory.SERVICE_UNAVAILABLE


class QuotaExhausted(ProviderError):
    """The account's quota is spent: every call would fail, the run stops."""

    kind = "quota"
    default_blame = ErrorBlame.USER_ERROR


class TransientError(ProviderError):
    """A 5xx, a timeout, a dropped connection or a malformed body: retry with backoff."""

    kind = "transient"
    default_category = ErrorCategory.SERVICE_UNAVAILABLE


class UnsupportedParameter(ProviderError):
    """The server refused an optional request parameter (``param``): send again without it, or in the
    next structured-output mode when it is ``response_format`` (``value``: the refused type)."""

    kind = "unsupported"

    def __init__(
        self, message: str, status: int | None = None, *, param: str, value: str | None = None
    ) -> None:
        super().__init__(message, status)
        self.param = param
        self.value = value


class RowRejected(ProviderError):
    """This request's content was refused (content filter, context too long): the row fails, the run
    goes on."""

    kind = "row"


class FatalProviderError(ProviderError):
    """Every call would fail the same way (authentication, unknown model, a request the server
    rejects, the same server error on every first call): the run stops."""

    kind = "fatal"


class JudgeCallError(TouchstoneError, RuntimeError):
    """One judge call failed after its retries (or with an error that retrying cannot fix for this row
    only, such as a reply that never matched the requested schema). The engine records the row as
    failed with this message; the run goes on.

    ``kind``: the score's error kind, that of the last :class:`ProviderError` (``"transient"``,
    ``"rate_limit"``, ``"row"``, ``"unsupported"``) or ``"invalid_output"`` for replies that never
    matched the expected format. An ``EvaluationException`` of category ``FAILED_EXECUTION``."""

    default_category = ErrorCategory.FAILED_EXECUTION

    def __init__(self, message: str, *, kind: str = "error", attempts: int = 1) -> None:
        super().__init__(message)
        self.kind = kind
        self.attempts = attempts


_KEY_PATTERNS = [
    re.compile(r"sk-[A-Za-z0-9_\-*]{6,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._\-~+/=]{8,}"),
    re.compile(r"(?i)(api[-_ ]?key[\"']?\s*[:=]\s*[\"']?)[^\s\"',;}]{6,}"),
]


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with the given secrets, credentials in URLs and anything shaped like an API key or
    bearer token replaced."""
    text = redact_urls(text)
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text
