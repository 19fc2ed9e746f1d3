"""Adaptive concurrency and request/token rate caps.

:class:`AdaptiveLimiter` is a semaphore whose size moves: it halves when the server answers 429 (once
per burst: 429s of requests that were started before the last decrease do not count again), climbs
quickly back to the level the server was seen to admit (one slot per success, like TCP slow start) and
then, after ``hold_rounds`` rounds of successes at that level (a round: as many successes as slots),
slowly beyond it (``increase_per_round`` slots per round), never above the configured maximum.
The admitted level is the number of requests that were sent before the refused
one and were still in flight when it was refused: the server was serving them all. A server's
Retry-After can also pause new requests for a while (:meth:`AdaptiveLimiter.pause`).

Only refusals that say something about concurrency lower the limit. A 429 met at a level of
concurrency the server has recently served (one of the last :data:`SERVED_WINDOW` replies came back
with at least as many requests in flight) is not a capacity signal: a server that refuses a few
requests at random (a flaky gateway, a shared per-minute window) would otherwise halve the limit again
and again and throttle the run to one request at a time. A capacity limit refuses the requests *above*
the level it serves, and those lower the limit: at once when no reply has come back yet, else on the
second such refusal before a reply comes back at that level (one refusal just above the levels served
while the limit probes upwards is as likely chance as capacity). Timeouts, dropped connections and
5xx never lower it: a slow or failing reply is not the server asking for less concurrency.

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


SERVED_WINDOW = 64
"""How many of the latest replies tell which levels of concurrency the server serves."""

STALL_FACTOR = 4.0
"""A request in flight this many times the recent 90th percentile of reply times is stalled..."""
STALL_MIN_SECONDS = 0.5
"""...and never sooner than this."""
DETACHED_PER_SLOT = 4
"""Stalled requests allowed per slot of the maximum (each holds only a socket)."""
LATENCY_SAMPLES = 64
"""Reply times kept (the last ones) to judge what is slow."""


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
        self._served: collections.deque[int] = collections.deque(maxlen=SERVED_WINDOW)  # their levels
        self.ignored_refusals = 0  # 429s at a level the server had just served
        self._strike_level = 0  # the lowest level refused above the served ones (0: none)
        self.detached = 0  # requests still waiting whose slots were handed on
        self.detached_total = 0
        self._latencies: collections.deque[float] = collections.deque(maxlen=LATENCY_SAMPLES)
        self._stall: float | None = None

    @property
    def waiting(self) -> bool:
        """Whether callers are waiting for a slot."""
        return bool(self._waiters)

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
        return Ticket(self.generation, time.monotonic(), self._seq, self.in_flight)

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
            if outcome == "rate_limited":
                self._refused(ticket)
            elif outcome == "success":
                self._served.append(ticket.level)
                if ticket.level >= self._strike_level:
                    self._strike_level = 0  # served after all: that refusal was chance
                self._increase()
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

    def _refused(self, ticket: Ticket) -> None:
        if ticket.generation != self.generation:
            return  # this request was sent before we last backed off: same burst
        if self._served:
            if ticket.level <= max(self._served):  # it has just served this many at once
                self.ignored_refusals += 1
                return
            if not self._strike_level:  # the first refusal above the served levels: wait for a second
                self._strike_level = ticket.level
                return
        self._decrease(ticket)

    def _decrease(self, ticket: Ticket) -> None:
        admitted = 0
        for seq in self._active:  # in the order taken: stop at the first one sent after the refused one
            if seq >= ticket.seq:
                break
            admitted += 1
        previous = self.limit
        self.limit = max(1.0, self.limit / 2)
        self.threshold = max(self.limit, min(previous, float(admitted)))
        self._successes = 0
        self._strike_level = 0
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
