"""Adaptive concurrency and request/token rate caps.

:class:`AdaptiveLimiter` is a semaphore whose size moves by the law of
:mod:`~touchstone.judges.concurrency_law` (the one a Ray cluster's limit follows too): it halves when
the server answers 429 (once per burst), climbs quickly back to the level the server was seen to admit
and then slowly beyond it, never above the configured maximum. Only refusals that say something about
concurrency lower it: a 429 at a level the server has just served is chance, not capacity. The limiter
adds what the law does not see: the slots and the callers waiting for them, and the *admitted* level
of a refusal, the requests sent before the refused one and still in flight when it was refused (the
server was serving them all). Timeouts, dropped connections and 5xx never lower the limit: a slow or
failing reply is not the server asking for less concurrency. A server's Retry-After can also pause
new requests for a while (:meth:`AdaptiveLimiter.pause`).

A request that takes far longer than the server's recent replies (:meth:`AdaptiveLimiter.stall_after`)
is *detached* (:meth:`AdaptiveLimiter.detach`): it keeps waiting for its reply up to its timeout, but
its slot goes to the next request, so a few hung requests do not hold the whole run up. At most
:data:`DETACHED_PER_SLOT` times ``maximum`` requests are detached at once.
:class:`TokenBucket` caps requests or tokens per minute.
"""

from __future__ import annotations

import asyncio
import collections
import math
import time
from dataclasses import dataclass

from touchstone.judges.concurrency_law import ConcurrencyLaw


@dataclass
class Ticket:
    """A held slot; ``generation`` is the limiter's decrease count when it was taken, ``seq`` its
    place in the order slots were taken."""

    generation: int
    started: float
    seq: int = 0
    level: int = 0
    """Requests in flight when it was taken, itself included."""
    detached: bool = False
    """Its slot was given to another request while it still waited (a stalled request)."""


STALL_FACTOR = 4.0
"""A request in flight this many times the recent 90th percentile of reply times is stalled..."""
STALL_MIN_SECONDS = 0.5
"""...and never sooner than this."""
DETACHED_PER_SLOT = 4
"""Stalled requests allowed per slot of the maximum (each holds only a socket)."""
LATENCY_SAMPLES = 64
"""Reply times kept (the last ones) to judge what is slow."""


class AdaptiveLimiter:
    """At most ``current`` holders at once; the limit adapts between 1 and ``maximum`` by its
    :attr:`law` (``adaptive=False``: it stays at ``maximum``)."""

    def __init__(
        self,
        maximum: int,
        *,
        adaptive: bool = True,
        increase_per_round: float = 1.0,
        hold_rounds: float = 8.0,
    ) -> None:
        self.law = ConcurrencyLaw(maximum, increase_per_round=increase_per_round, hold_rounds=hold_rounds)
        self.maximum = self.law.maximum
        self.adaptive = adaptive
        self.in_flight = 0
        self._seq = 0
        self._active: dict[int, None] = {}  # seqs of the slots held, in the order they were taken
        self._waiters: collections.deque[asyncio.Future[None]] = collections.deque()
        self._paused_until = 0.0
        self.detached = 0  # requests still waiting whose slots were handed on
        self.detached_total = 0
        self._latencies: collections.deque[float] = collections.deque(maxlen=LATENCY_SAMPLES)
        self._stall: float | None = None

    # The law's figures, read through the limiter (a judge session's provenance reads them here; a
    # Ray worker's limiter writes the cluster's ``decreases`` and ``min_limit`` over them).
    @property
    def limit(self) -> float:
        """The limit now, a fraction of a slot included."""
        return self.law.limit

    @property
    def threshold(self) -> float:
        """The last level known to work: below it the limit climbs one slot per success."""
        return self.law.threshold

    @property
    def increase_per_round(self) -> float:
        """Slots the limit grows per round of successes above :attr:`threshold`."""
        return self.law.increase_per_round

    @property
    def hold_rounds(self) -> float:
        """Rounds of successes at :attr:`threshold` before the limit grows beyond it."""
        return self.law.hold_rounds

    @property
    def generation(self) -> int:
        """Decreases so far: a ticket taken in an older generation was sent before the last one."""
        return self.law.generation

    @property
    def decreases(self) -> int:
        """How many times the limit was halved."""
        return self.law.decreases

    @decreases.setter
    def decreases(self, value: int) -> None:
        self.law.decreases = value

    @property
    def min_limit(self) -> float:
        """The lowest the limit has been."""
        return self.law.min_limit

    @min_limit.setter
    def min_limit(self, value: float) -> None:
        self.law.min_limit = value

    @property
    def ignored_refusals(self) -> int:
        """429s at a level the server had just served (not taken as a capacity signal)."""
        return self.law.ignored_refusals

    @property
    def waiting(self) -> bool:
        """Whether callers are waiting for a slot."""
        return bool(self._waiters)

    @property
    def current(self) -> int:
        """The whole number of slots now available to holders."""
        return self.law.current

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
        return Ticket(self.law.generation, time.monotonic(), self._seq, self.in_flight)

    def _wake(self) -> None:
        free = self.current - self.in_flight
        while free > 0 and self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)
                free -= 1

    def release(self, ticket: Ticket, outcome: str = "success") -> None:
        """Give the slot back. ``outcome``: ``success``, ``rate_limited`` (a 429) or anything else
        (``error``, ``timeout``, ``cancelled``: no change of the limit)."""
        if ticket.detached:
            self.detached -= 1
        else:
            self.in_flight -= 1
            self._active.pop(ticket.seq, None)
        if outcome == "success":
            self._latencies.append(time.monotonic() - ticket.started)
            if len(self._latencies) % 8 == 0 or self._stall is None:
                self._stall = self._stall_from_samples()
        if self.adaptive:
            if outcome == "success":
                self.law.succeeded(ticket.level)
            elif outcome == "rate_limited" and self.law.counts(ticket.generation, ticket.level):
                self.law.decrease(self._admitted(ticket))
        self._wake()

    def stall_after(self) -> float | None:
        """Seconds after which a request in flight counts as stalled (None: too few replies seen)."""
        return self._stall

    def _stall_from_samples(self) -> float | None:
        if len(self._latencies) < 8:
            return None
        ordered = sorted(self._latencies)
        p90 = ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]
        return max(STALL_MIN_SECONDS, STALL_FACTOR * p90)

    def detach(self, ticket: Ticket) -> None:
        """``ticket``'s request is stalled: hand its slot on while it goes on waiting (its
        :meth:`release` comes later). Does nothing when too many are detached already."""
        if ticket.detached or ticket.seq not in self._active:
            return
        if self.detached >= DETACHED_PER_SLOT * self.maximum:
            return
        ticket.detached = True
        self.detached += 1
        self.detached_total += 1
        self.in_flight -= 1
        self._active.pop(ticket.seq, None)
        self._wake()

    def _admitted(self, ticket: Ticket) -> int:
        """Requests sent before ``ticket``'s and still in flight: the level the server was serving."""
        admitted = 0
        for seq in self._active:  # in the order taken: stop at the first one sent after the refused one
            if seq >= ticket.seq:
                break
            admitted += 1
        return admitted

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
