"""The limits one request passes before it goes out: the backend's contact gate (until a first
success, one request at a time), its requests-per-minute and tokens-per-minute caps, the run's abort
state, then a concurrency slot (see :mod:`touchstone.judges.hedging`). A reply saying the server's
window is exhausted pauses the backend's later requests until it resets."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from touchstone.judges.abort import AbortState
from touchstone.judges.hedging import Hedging
from touchstone.judges.providers.base import Backend, Response


class Limits:
    """Sends requests to backends within their limits."""

    __slots__ = ("_abort", "_hedging", "_max_pause")

    def __init__(self, hedging: Hedging, abort: AbortState, max_pause: float) -> None:
        self._hedging = hedging
        self._abort = abort
        self._max_pause = max_pause

    async def send(self, backend: Backend, tokens: int, send: Callable[[], Awaitable[Response]]) -> Response:
        """One request (``tokens``: its estimated size, for the tokens-per-minute cap), counted as a
        call. Until the backend's first success it waits its turn at the ``contact`` gate: a server
        that fails every call costs a few requests, not one per row in flight."""
        contact = backend.contact
        probing = False if contact.open else await contact.acquire()
        try:
            if backend.rpm is not None:
                await backend.rpm.take(1)
            if backend.tpm is not None:
                await backend.tpm.take(tokens)
            if self._abort.error is not None:
                self._abort.raise_copy()
            response = await self._hedging.request(backend.limiter, send)
            contact.open = backend.confirmed = True
        finally:
            if probing:
                contact.release()
        if response.pause:
            backend.limiter.pause(min(response.pause, self._max_pause))
        return response
