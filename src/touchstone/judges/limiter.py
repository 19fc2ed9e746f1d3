"""Adaptive concurrency and request/token rate caps.

:class:`AdaptiveLimiter` is a semaphore whose size moves: it halves when the server answers 429 (once
per burst: 429s of requests that were started before the last decrease do not count again), climbs
quickly back to the level the server was seen to admit (one slot per success, like TCP slow start) and
then, after ``hold_rounds`` rounds of successes at that level (a round: as many successes as slots),
slowly beyond it (``increase_per_round`` slots per round), never above the configured maximum.
The admitted level is the number of requests that were sent before the refused
one and were still in flight when it was refused: the server was serving them all. A server's
Retry-After can also pause new requests for a while (:meth:`AdaptiveLimiter.pause`).
:class:`TokenBucket` caps requests or tokens per minute.
"""

from __future__ import annotations

import asyncio
import collections
import time
from dataclasses import dataclass


@dataclass
class Ticket:
    """A held slot; ``generation`` is the limiter's decrease count when it was taken, ``seq`` its
    place in the order slots were taken."""

    generation: int
    started: float
    seq: int = 0


class AdaptiveLimiter:
    """At most ``limit`` holders at once; ``limit`` adapts between 1 and ``maximum``."""

    def __init__(
        self,
        maximum: int,
        *,
        adaptive: bool = True,
        increase_per_round: float = 1.0,
        hold_rounds: float = 8.0,
    ) -> None:
        self.maximum = max(1, int(maximum))
        self.adaptive = adaptive
        self.limit = float(self.maximum)
        self.threshold = float(self.maximum)  # last level known to work; below it we climb fast
        self.increase_per_round = increase_per_round
        self.hold_rounds = hold_rounds
        self._successes = 0  # since the last decrease
        self.in_flight = 0
        self.generation = 0
        self.decreases = 0
        self.min_limit = self.limit
        self._seq = 0
        self._active: dict[int, None] = {}  # seqs of the slots held, in the order they were taken
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._paused_until = 0.0

    @property
    def current(self) -> int:
        """The whole number of slots now available to holders."""
        return max(1, int(self.limit))

    async def acquire(self) -> Ticket:
        """Wait for a slot (first come, first served)."""
        while True:
            delay = self._paused_until - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
                continue
            if self.in_flight < self.current and not self._waiters:
                break
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut in self._waiters:
                    self._waiters.remove(fut)
                elif fut.done() and not fut.cancelled():
                    self._wake()  # we were handed a slot we will not use: pass it on
                raise
            if self._paused_until > time.monotonic():
                continue
            if self.in_flight < self.current:
                break
        self.in_flight += 1
        self._seq += 1
        self._active[self._seq] = None
        return Ticket(self.generation, time.monotonic(), self._seq)

    def _wake(self) -> None:
        free = self.current - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    def release(self, ticket: Ticket, outcome: str = "success") -> None:
        """Give the slot back. ``outcome``: ``success``, ``rate_limited`` (a 429) or ``error``."""
        self.in_flight -= 1
        self._active.pop(ticket.seq, None)
        if self.adaptive:
            if outcome == "rate_limited":
                self._decrease(ticket)
            elif outcome == "success":
                self._increase()
        self._wake()

    def _decrease(self, ticket: Ticket) -> None:
        if ticket.generation != self.generation:
            return  # this request was sent before we last backed off: same burst
        admitted = 0
        for seq in self._active:  # in the order taken: stop at the first one sent after the refused one
            if seq >= ticket.seq:
                break
            admitted += 1
        previous = self.limit
        self.limit = max(1.0, self.limit / 2)
        self.threshold = max(self.limit, min(previous, float(admitted)))
        self._successes = 0
        self.generation += 1
        self.decreases += 1
        self.min_limit = min(self.min_limit, self.limit)

    def _increase(self) -> None:
        if self.limit >= self.maximum:
            return
        self._successes += 1
        if self.limit < self.threshold:
            self.limit = min(self.threshold, self.limit + 1.0)
        elif self.decreases == 0 or self._successes >= self.hold_rounds * self.threshold:
            self.limit = min(float(self.maximum), self.limit + self.increase_per_round / self.limit)

    def pause(self, seconds: float) -> None:
        """Start no new request for ``seconds`` (a server asked us to wait)."""
        self._paused_until = max(self._paused_until, time.monotonic() + seconds)


class TokenBucket:
    """``rate`` units per minute, with a burst of one second's worth (at least one request's worth)."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.tokens = self.capacity
        self.updated = time.monotonic()
        self._lock = asyncio.Lock()

    async def take(self, amount: float = 1.0) -> None:
        amount = min(float(amount), self.capacity)
        async with self._lock:
            while True:
                now = time.monotonic()
                self.tokens = min(self.capacity, self.tokens + (now - self.updated) * self.rate)
                self.updated = now
                if self.tokens >= amount:
                    self.tokens -= amount
                    return
                await asyncio.sleep((amount - self.tokens) / self.rate)
