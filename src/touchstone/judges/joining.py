"""Joining identical calls in flight: a call whose key is already being asked waits for that reply
instead of sending the same request again (the cache answers it only once the first has returned)."""

from __future__ import annotations

import asyncio
from typing import Any

Stored = dict[str, Any]
"""A reply in the compact form the cache keeps (see :func:`touchstone.judges.openai_replies.stored_reply`)."""


class InFlight:
    """The calls in flight, by cache key."""

    __slots__ = ("_calls",)

    def __init__(self) -> None:
        self._calls: dict[str, asyncio.Future[Stored]] = {}

    async def join(self, key: str) -> Stored | None:
        """The reply of the identical call in flight, once it arrives; None when none is in flight
        or it failed (the caller then makes its own call)."""
        pending = self._calls.get(key)
        if pending is None:
            return None
        try:
            return await asyncio.shield(pending)
        except Exception:
            return None

    def lead(self, key: str) -> asyncio.Future[Stored]:
        """Mark this caller's call as the one in flight under ``key`` (end it with :meth:`done`)."""
        future: asyncio.Future[Stored] = asyncio.get_running_loop().create_future()
        self._calls[key] = future
        return future

    def done(self, key: str, future: asyncio.Future[Stored], outcome: Stored | BaseException) -> None:
        """The led call ended with a reply or an exception; the callers joined to it get the same."""
        if self._calls.get(key) is future:
            del self._calls[key]
        if future.done():
            return
        if isinstance(outcome, BaseException):
            future.set_exception(outcome if isinstance(outcome, Exception) else asyncio.CancelledError())
            future.exception()  # retrieved: the joined callers handle it themselves
        else:
            future.set_result(outcome)

    def pending(self, key: str) -> bool:
        """Whether a call under ``key`` is in flight."""
        return key in self._calls
