"""What this process has learnt about judge servers, so a later run need not learn it again.

A new backend knows nothing of its server: its first request goes alone (the *contact* gate, so a
server that rejects everything costs a few calls, not one per row in flight), and the first request
with a JSON schema negotiates the structured-output mode. Both cost one round trip at the start of
every run; on a short run against a fast server that is several percent of the run (on the 1,000-row
safety benchmark, 0.2 s of about 3.5 s).

When a run's session closes, what it learnt about each server it reached (that the server answers,
the structured-output mode it takes, the optional parameters it refused) is kept here, in memory, for
:data:`REMEMBER_FOR` seconds, keyed by the backend's session key (endpoint, model, a digest of the
key: nothing secret). A later backend for the same key starts from it: no contact probe, the mode
already decided. Nothing is trusted blindly: a remembered server that now fails every call is still
stopped after its first few identical failures (the session counts those until a success *in this
run*, not from memory), and a remembered mode the server now rejects is downgraded as usual.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from touchstone.judges.providers.base import Backend

REMEMBER_FOR = 3600.0
"""Seconds a server's traits are reused after the run that learnt them ended."""


@dataclass(frozen=True)
class ServerTraits:
    """What one run learnt about a server: its structured-output mode (None: no schema call decided
    one), the optional parameters it refused, and when (``time.monotonic()``)."""

    structured: str | None
    unsupported: frozenset[str]
    learnt_at: float


_KNOWN: dict[str, ServerTraits] = {}
_LOCK = threading.Lock()


def remember(key: str, backend: Backend) -> None:
    """Keep what ``backend`` learnt, when its server answered at least once in this run."""
    if not backend.confirmed:
        return
    structured = backend.structured.mode if backend.structured.decided else None
    traits = ServerTraits(structured, frozenset(backend.unsupported), time.monotonic())
    with _LOCK:
        _KNOWN[key] = traits


def recall(key: str, backend: Backend) -> ServerTraits | None:
    """Start ``backend`` from what an earlier run learnt about its server (when recent enough):
    contact open, the structured-output mode decided, refused parameters left out. Returns the
    traits used, or None."""
    with _LOCK:
        traits = _KNOWN.get(key)
        if traits is not None and time.monotonic() - traits.learnt_at > REMEMBER_FOR:
            del _KNOWN[key]
            traits = None
    if traits is None:
        return None
    backend.contact.open = True
    if traits.structured is not None:
        backend.structured.fix(traits.structured)
    backend.unsupported.update(traits.unsupported)
    return traits


def forget_all() -> None:
    """Forget every server (tests start each from a process's first run)."""
    with _LOCK:
        _KNOWN.clear()
