"""Errors of the judge machinery, and scrubbing of secrets from anything shown to a user."""

from __future__ import annotations

import re
from collections.abc import Iterable

from touchstone.errors import RunAbortedError

__all__ = ["JudgeCallError", "RunAbortedError", "redact"]


class JudgeCallError(RuntimeError):
    """One judge call failed after its retries (or with an error that retrying cannot fix for this row
    only, such as a reply that never matched the requested schema). The engine records the row as
    failed with this message; the run goes on."""

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
    """``text`` with the given secrets and anything shaped like an API key or bearer token replaced."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    for pattern in _KEY_PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + "***", text)
    return text
