"""One request on a concurrency slot, and hedging: a request far slower than the server's recent
replies is sent once more beside it, and the first reply wins (the other is cancelled).

Hedges are few (:data:`HEDGE_SHARE` of the calls plus :data:`HEDGE_FREE`): only a request that
stalls gets one. A stalled request also hands its slot on (it goes on waiting up to its timeout), so
hung requests do not hold a run up; neither they nor timeouts lower the concurrency limit (only 429s
do, see :class:`~touchstone.judges.limiter.AdaptiveLimiter`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from touchstone.judges.abort import AbortState
from touchstone.judges.accounting import Accounting
from touchstone.judges.errors import RateLimited
from touchstone.judges.limiter import AdaptiveLimiter, Ticket
from touchstone.judges.providers.base import Response

HEDGE_SHARE = 0.1
"""Hedged requests (a stalled request sent once more) are at most this share of the calls..."""
HEDGE_FREE = 4
"""...plus this many."""


class Hedging:
    """Sends requests on slots of a backend's limiter, each counted as a call, hedging stalled ones
    (when ``enabled``, within the share)."""

    __slots__ = ("_abort", "_accounting", "enabled", "hedges")

    def __init__(self, enabled: bool, accounting: Accounting, abort: AbortState) -> None:
        self.enabled = enabled
        self.hedges = 0
        self._accounting = accounting
        self._abort = abort

    async def request(self, limiter: AdaptiveLimiter, send: Callable[[], Awaitable[Response]]) -> Response:
        """``await send()`` on a slot of ``limiter``; once stalled, a second ``send()`` beside it."""
        ticket = await self._slot(limiter)
        stall = limiter.stall_after()
        if (
            stall is None
            or not self.enabled
            or self.hedges >= HEDGE_SHARE * self._accounting.stats["calls"] + HEDGE_FREE
        ):
            return await self._timed(limiter, ticket, send())
        first = asyncio.ensure_future(self._timed(limiter, ticket, send()))
        tasks = [first]
        try:
            done, _ = await asyncio.wait(tasks, timeout=stall)
            if done or self._abort.error is not None:
                return await first
            self.hedges += 1
            self._accounting.count(hedged=1)

            async def again() -> Response:
                return await self._timed(limiter, await self._slot(limiter), send())

            tasks.append(asyncio.ensure_future(again()))
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
            winner = done.pop()
            error = winner.exception()
            if error is None:
                return winner.result()
            other = tasks[1] if winner is first else first
            try:
                return await other
            except Exception:
                raise error from None
        finally:
            pending = [task for task in tasks if not task.done()]
            for task in pending:
                task.cancel()
            if pending:
                # let the loser end here, so its call is counted in this row's usage before the row
                # returns (counted later, it would reach the run's total but no row's)
                await asyncio.gather(*pending, return_exceptions=True)

    async def _slot(self, limiter: AdaptiveLimiter) -> Ticket:
        ticket = await limiter.acquire()
        if self._abort.error is not None:
            limiter.release(ticket, "cancelled")
            self._abort.raise_copy()
        return ticket

    async def _timed(
        self, limiter: AdaptiveLimiter, ticket: Ticket, request: Awaitable[Response]
    ) -> Response:
        """One request on a held slot, counted as a call; past the limiter's stall time the slot is
        handed on while the request goes on."""
        stall = limiter.stall_after()
        loop = asyncio.get_running_loop()
        watch = None if stall is None else loop.call_later(stall, limiter.detach, ticket)
        outcome = "error"
        try:
            response = await request
            outcome = "success"
        except RateLimited:
            outcome = "rate_limited"
            raise
        finally:
            if watch is not None:
                watch.cancel()
            limiter.release(ticket, outcome)
            self._accounting.count(calls=1)
        if limiter.waiting:
            # the slot went to a waiting request: let it go out before this reply is processed
            await asyncio.sleep(0)
        return response
