"""The law by which an adaptive concurrency limit moves, apart from any slots or waiting.

One law for a judge backend on this machine (:class:`~touchstone.judges.limiter.AdaptiveLimiter`)
and for the whole of a Ray cluster (:class:`~touchstone.engine.executors.ray.limiter.ClusterLimit`),
so a run adapts to a server the same way wherever its judge calls are made. It sees only outcomes:
a request that succeeded at a level of concurrency, or one refused (a 429) at a level, sent in a
generation (the count of decreases when it was sent).

- A success records its level as served, cancels a pending strike it reaches, and grows the limit:
  one slot per success back up to the level last known to work (``threshold``, like TCP slow
  start), then, after ``hold_rounds`` rounds of successes at that level (a round: as many successes
  as slots), ``increase_per_round`` slots per round, never above ``maximum``.
- A refusal counts once per burst: one sent before the last decrease (an older generation) does not
  count again. One at a level among the last :data:`SERVED_WINDOW` levels served is not a capacity
  signal (a flaky gateway, a shared per-minute window) and is ignored. The first refusal above the
  levels served waits for a second before the limit moves, since one refusal just above them while
  the limit probes upwards is as likely chance as capacity; with nothing served yet it counts at once.
- A counted refusal halves the limit (never below one), and the level the server was serving when
  it refused (``admitted``: the requests sent before it and still in flight) becomes the threshold
  the limit climbs back to quickly.
"""

from __future__ import annotations

import collections

SERVED_WINDOW = 64
"""How many of the latest replies tell which levels of concurrency the server serves."""


class ConcurrencyLaw:
    """An adaptive limit between 1 and ``maximum``, moved by the outcomes it is told of."""

    def __init__(self, maximum: int, *, increase_per_round: float = 1.0, hold_rounds: float = 8.0) -> None:
        self.maximum = max(1, int(maximum))
        self.limit = float(self.maximum)
        self.threshold = float(self.maximum)  # last level known to work; below it the limit climbs fast
        self.increase_per_round = increase_per_round
        self.hold_rounds = hold_rounds
        self.generation = 0
        self.decreases = 0
        self.min_limit = self.limit
        self.ignored_refusals = 0  # 429s at a level the server had just served
        self._successes = 0  # since the last decrease
        self._strike_level = 0  # the lowest level refused above the served ones (0: none)
        self._served: collections.deque[int] = collections.deque(maxlen=SERVED_WINDOW)

    @property
    def current(self) -> int:
        """The whole number of slots the limit allows now."""
        return max(1, int(self.limit))

    def succeeded(self, level: int) -> None:
        """A request sent at ``level`` (requests in flight, itself included) got its reply."""
        self._served.append(level)
        if level >= self._strike_level:
            self._strike_level = 0  # served after all: that refusal was chance
        if self.limit >= self.maximum:
            return
        # written out here, not in a method of its own: this runs once per judge call
        self._successes += 1
        if self.limit < self.threshold:
            self.limit = min(self.threshold, self.limit + 1.0)
        elif self.decreases == 0 or self._successes >= self.hold_rounds * self.threshold:
            self.limit = min(float(self.maximum), self.limit + self.increase_per_round / self.limit)

    def counts(self, generation: int, level: int) -> bool:
        """Whether a refusal of a request sent in ``generation`` at ``level`` is a capacity signal
        (then call :meth:`decrease`); an ignored or first strike is recorded here."""
        if generation != self.generation:
            return False  # sent before the last decrease: the same burst
        if self._served:
            if level <= max(self._served):  # the server has just served this many at once
                self.ignored_refusals += 1
                return False
            if not self._strike_level:  # the first refusal above the served levels: wait for a second
                self._strike_level = level
                return False
        return True

    def decrease(self, admitted: int) -> None:
        """Halve the limit after a counted refusal; ``admitted``: the requests the server was
        serving when it refused (sent before the refused one, still in flight)."""
        previous = self.limit
        self.limit = max(1.0, self.limit / 2)
        self.threshold = max(self.limit, min(previous, float(admitted)))
        self._successes = 0
        self._strike_level = 0
        self.generation += 1
        self.decreases += 1
        self.min_limit = min(self.min_limit, self.limit)
