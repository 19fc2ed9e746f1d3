"""Former home of the provider transport, kept so existing imports work: see
:mod:`touchstone.judges.providers` (``base``: interface, limits, error classification;
``openai_compat``: OpenAI, Azure OpenAI and OpenAI-compatible servers; ``registry``: which backend
serves a configuration)."""

from __future__ import annotations

from touchstone.judges.providers.base import (
    FATAL,
    QUOTA,
    RATE_LIMIT,
    ROW,
    STRUCTURED_MODES,
    TRANSIENT,
    UNSUPPORTED,
    Backend,
    BackendBase,
    ChatRequest,
    Failure,
    Gate,
    Response,
    StructuredOutput,
    classify_status,
    exhausted_pause,
    parse_duration,
    retry_after_seconds,
)
from touchstone.judges.providers.openai_compat import (
    AZURE_SCOPE,
    CONNECTIONS_PER_CLIENT,
    OpenAIBackend,
    resolve_transport,
)
from touchstone.judges.providers.registry import make_backend

__all__ = [
    "AZURE_SCOPE",
    "CONNECTIONS_PER_CLIENT",
    "FATAL",
    "QUOTA",
    "RATE_LIMIT",
    "ROW",
    "STRUCTURED_MODES",
    "TRANSIENT",
    "UNSUPPORTED",
    "Backend",
    "BackendBase",
    "ChatRequest",
    "Failure",
    "Gate",
    "OpenAIBackend",
    "Response",
    "StructuredOutput",
    "classify_status",
    "exhausted_pause",
    "make_backend",
    "parse_duration",
    "resolve_transport",
    "retry_after_seconds",
]
