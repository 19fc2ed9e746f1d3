"""One adaptive concurrency limit for a whole Ray cluster, without a round trip to it per request.

The judge workers of a Ray run (async actors, each with its own judge session) must together keep
under one limit per judge backend: the run's ``concurrency``, and below it whatever the server is
seen to admit. Asking a central actor for a slot before each request and giving it back after made
two actor calls per judge call (about 640 a second at the fake server's capacity): the actor
saturated a core and the run kept only about 60% of the server's capacity. Letting each worker adapt
on its own does not work either: a level of concurrency one worker had served while the others were
quiet says nothing about the same level beside their requests, and the workers' limits drifted
apart (one at the cap, one stuck at a few slots).

So the *adaptation* is the cluster's and the *slots* are leased. :class:`LimiterActor` holds, per
backend, a :class:`ClusterLimit` (the law of :mod:`~touchstone.judges.concurrency_law`, which a local
:class:`~touchstone.judges.limiter.AdaptiveLimiter` follows too, applied to the cluster's levels of
concurrency), each worker's share of it and what each holds, and
the latest pause a server asked for (Retry-After). A worker's :class:`Lease` reports every
:data:`LEASE_SECONDS` (at once after a 429 or a long pause; sooner while it holds nothing and has
requests waiting): its requests in flight and waiting, and how the requests that ended since its last
report went (the cluster's level each was sent at, its generation, success or 429). The actor feeds
those outcomes to the limit, splits the limit among the workers by demand (:func:`split`), and grows a
worker's share only into slots the others do not hold, so the shares in use never add up to more
than the limit, also while they move from one worker to another. Between reports a worker's
:class:`LeasedLimiter` admits requests up to its share with no call to anyone.

A worker that restarts (its process died) reports under a new *life*: what its previous life held
is given back at once (those requests died with it). A worker not heard from for
:data:`SILENT_SECONDS` loses its share to the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import dataclass
from typing import Any

from touchstone.judges.concurrency_law import ConcurrencyLaw
from touchstone.judges.limiter import AdaptiveLimiter, Ticket

LEASE_SECONDS = 0.1
"""How often a worker reports and has its shares renewed."""
LEASE_GAP_SECONDS = 0.02
"""Least time between two reports of a worker (a report asked for sooner waits this long)."""
SILENT_SECONDS = 30.0
"""A worker silent this long is taken for gone: its share goes to the others."""
SUCCESS, RATE_LIMITED = 1, 2
"""Outcome codes in a worker's report (other outcomes do not move the limit and are not sent)."""


def split(maximum: int, demands: dict[str, int]) -> dict[str, int]:
    """``maximum`` slots shared among workers by ``demands`` (requests each has in flight or waiting):
    every worker gets what it asks for up to an equal share of what is left (water-filling), and
    slots nobody asks for are spread evenly, so an idle worker can start at once when work comes.
    The shares add up to ``maximum``."""
    if not demands:
        return {}
    order = sorted(demands, key=lambda owner: (demands[owner], owner))
    shares: dict[str, int] = {}
    left = maximum
    for k, owner in enumerate(order):
        fair = left // (len(order) - k)
        shares[owner] = min(max(0, demands[owner]), fair)
        left -= shares[owner]
    for k, owner in enumerate(order):  # the rest, evenly
        shares[owner] += left // len(order) + (1 if k < left % len(order) else 0)
    return shares


class ClusterLimit(ConcurrencyLaw):
    """The adaptive limit of one backend for the whole cluster, moved by the outcomes the workers
    report, by the same law as a local run's limiter (:mod:`touchstone.judges.concurrency_law`). A
    request's level is the cluster's: the requests in flight in all workers when it was sent, itself
    included. ``adaptive=False``: the limit stays at ``maximum``."""

    def __init__(
        self,
        maximum: int,
        *,
        adaptive: bool = True,
        increase_per_round: float = 1.0,
        hold_rounds: float = 8.0,
    ) -> None:
        super().__init__(maximum, increase_per_round=increase_per_round, hold_rounds=hold_rounds)
        self.adaptive = adaptive

    def outcome(self, generation: int, level: int, code: int, admitted: int = 0) -> None:
        """One request's end: ``code`` :data:`SUCCESS` or :data:`RATE_LIMITED` (``admitted``: the
        requests sent before a refused one and still in flight when it was refused: the level the
        server was serving)."""
        if not self.adaptive:
            return
        if code == SUCCESS:
            self.succeeded(level)
        elif code == RATE_LIMITED and self.counts(generation, level):
            self.decrease(admitted)


@dataclass
class _Holder:
    """A worker as the limiter actor knows it, for one backend."""

    holding: int = 0
    """Requests it may have in flight now: its share, or more while older requests drain."""
    in_flight: int = 0
    demand: int = 0
    seen: float = 0.0


class _Pool:
    """One backend's limit, shared by the workers."""

    def __init__(self, maximum: int, adaptive: bool, expected: int) -> None:
        self.limit = ClusterLimit(maximum, adaptive=adaptive)
        self.expected = expected
        self.holders: dict[str, _Holder] = {}
        self.reported: set[str] = set()
        self.pause_until = 0.0  # wall-clock time: workers compare it with their own clocks

    def lease(self, owner: str, report: dict[str, Any], now: float) -> dict[str, Any]:
        for generation, level, code, admitted in report.get("done", ()):
            self.limit.outcome(int(generation), int(level), int(code), int(admitted))
        for who, holder in list(self.holders.items()):
            if who != owner and now - holder.seen > SILENT_SECONDS:
                del self.holders[who]
        me = self.holders.setdefault(owner, _Holder())
        self.reported.add(owner)
        total = self.limit.current
        me.seen, me.in_flight = now, int(report.get("in_flight", 0))
        me.demand = min(total, me.in_flight + int(report.get("waiting", 0)))
        demands = {who: h.demand for who, h in self.holders.items()}
        for k in range(self.expected - len(self.reported)):  # workers yet to report keep a fair share
            demands[f"\0{k}"] = total
        target = split(total, demands)[owner]
        # what the others may have in flight (their shares can fill before they report again)
        others = sum(h.holding for who, h in self.holders.items() if who != owner)
        # never more than the others leave: after the limit fell, nobody starts a request before the
        # slots held add up to no more than it (as a local limiter waits for its requests to drain)
        share = max(0, min(target, total - others))
        me.holding = max(share, me.in_flight)
        self.pause_until = max(self.pause_until, float(report.get("pause_until", 0.0)))
        return {
            "share": share,
            "pause_until": self.pause_until,
            "others": others,
            "generation": self.limit.generation,
            "limit": total,
            "min_limit": self.limit.min_limit,
            "decreases": self.limit.decreases,
        }

    def forget(self, owner: str) -> None:
        self.holders.pop(owner, None)

    def state(self) -> dict[str, Any]:
        return {
            "maximum": self.limit.maximum,
            "limit": self.limit.current,
            "min_limit": self.limit.min_limit,
            "decreases": self.limit.decreases,
            "ignored_refusals": self.limit.ignored_refusals,
            "workers": len(self.holders),
            "holding": sum(h.holding for h in self.holders.values()),
        }


class LimiterActor:
    """The cluster's concurrency limits, one per judge backend (a Ray actor; see the module's text).
    ``workers``: how many judge workers will report (each gets a fair share before it first does)."""

    def __init__(self, workers: int = 1) -> None:
        self._workers = workers
        self._pools: dict[str, _Pool] = {}
        self._lives: dict[str, str] = {}

    def lease(self, owner: str, life: str, reports: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """A worker's report per backend; its share of each and the cluster's figures."""
        if self._lives.get(owner) != life:
            # a new worker, or a restarted one: what its previous life held ended with that process
            self._lives[owner] = life
            for pool in self._pools.values():
                pool.forget(owner)
        now = time.monotonic()
        answers = {}
        for key, report in reports.items():
            if key not in self._pools:
                self._pools[key] = _Pool(
                    int(report.get("maximum", 1)), bool(report.get("adaptive", True)), self._workers
                )
            answers[key] = self._pools[key].lease(owner, report, now)
        return answers

    def state(self) -> dict[str, dict[str, Any]]:
        """Per backend: the maximum, the limit now and its lowest, decreases, workers, slots held."""
        return {key: pool.state() for key, pool in self._pools.items()}


class LeasedLimiter(AdaptiveLimiter):
    """A judge worker's limiter for one backend: admits requests up to the share of the cluster's
    limit its :class:`Lease` holds (none before the first lease), hands stalled requests' slots on as
    an :class:`AdaptiveLimiter` does, and keeps the outcomes for the next report. Its ``current``,
    ``min_limit`` and ``decreases`` are the cluster's as last heard (``current``: this worker's
    share), for the judge session's provenance."""

    def __init__(self, maximum: int, *, adaptive: bool, lease: Lease) -> None:
        super().__init__(maximum, adaptive=False)  # the cluster adapts, not this worker
        self.cluster_adaptive = adaptive
        self.share = 0
        self.others = 0
        """Requests the other workers may have in flight, as the limiter actor last heard."""
        self.cluster_generation = 0
        self.pause_wall = 0.0
        self._done: list[tuple[int, int, int, int]] = []
        self._lease = lease

    @property
    def current(self) -> int:
        return self.share

    @property
    def queued(self) -> int:
        """How many callers wait for a slot."""
        return len(self._waiters)

    async def acquire(self) -> Ticket:
        ticket = await super().acquire()
        ticket.generation = self.cluster_generation
        ticket.level += self.others  # the cluster's level, not this worker's
        return ticket

    def release(self, ticket: Ticket, outcome: str = "success") -> None:
        if outcome == "rate_limited":
            # requests sent before this one and still in flight: the server was serving them
            admitted = sum(1 for seq in self._active if seq < ticket.seq) + self.others
            self._done.append((ticket.generation, ticket.level, RATE_LIMITED, admitted))
            self._lease.soon()
        elif outcome == "success":
            self._done.append((ticket.generation, ticket.level, SUCCESS, 0))
        super().release(ticket, outcome)

    def granted(self, answer: dict[str, Any]) -> None:
        """What the limiter actor answered: this worker's share, the cluster's generation, limit
        figures and the other workers' requests in flight, and the latest pause a server asked for."""
        self.share = int(answer["share"])
        self.others = int(answer.get("others", 0))
        self.cluster_generation = int(answer.get("generation", 0))
        self.min_limit = float(answer.get("min_limit", self.min_limit))
        self.decreases = int(answer.get("decreases", self.decreases))
        remaining = float(answer.get("pause_until", 0.0)) - time.time()
        if remaining > 0:
            super().pause(remaining)
        self._wake()

    def pause(self, seconds: float) -> None:
        super().pause(seconds)
        self.pause_wall = max(self.pause_wall, time.time() + seconds)
        if seconds >= LEASE_SECONDS:  # long enough to be worth telling the other workers now
            self._lease.soon()

    def report(self) -> dict[str, Any]:
        """What the next lease tells the limiter actor (the outcomes are handed over once)."""
        done, self._done = self._done, []
        return {
            "maximum": self.maximum,
            "adaptive": self.cluster_adaptive,
            "in_flight": self.in_flight,
            "waiting": self.queued,
            "pause_until": self.pause_wall,
            "done": done,
        }

    def returned(self, report: dict[str, Any]) -> None:
        """A report that did not arrive: its outcomes go with the next one."""
        self._done[:0] = report["done"]


class Lease:
    """A judge worker's side of the cluster's limits: one :class:`LeasedLimiter` per backend, reported
    to the :class:`LimiterActor` and given their shares every :data:`LEASE_SECONDS`, from a task on
    the worker's event loop."""

    def __init__(self, actor: Any, owner: str) -> None:
        self._actor, self._owner = actor, owner
        self._life = uuid.uuid4().hex
        self._limiters: dict[str, LeasedLimiter] = {}
        self._task: asyncio.Task[None] | None = None
        self._soon: asyncio.Event | None = None
        self.renewals = 0
        self.failures = 0

    def limiter(self, key: str, maximum: int, adaptive: bool) -> LeasedLimiter:
        """The worker's limiter for the backend ``key`` (one per key, shared by its backends)."""
        limiter = self._limiters.get(key)
        if limiter is None:
            limiter = self._limiters[key] = LeasedLimiter(maximum, adaptive=adaptive, lease=self)
            if self._task is None or self._task.done():
                self._task = asyncio.get_running_loop().create_task(self._run())
            self.soon()
        return limiter

    def soon(self) -> None:
        """Report now rather than at the next tick."""
        if self._soon is None:
            self._soon = asyncio.Event()
        self._soon.set()

    async def _run(self) -> None:
        if self._soon is None:
            self._soon = asyncio.Event()
        while True:
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._soon.wait(), LEASE_SECONDS)
            self._soon.clear()
            await self.renew()
            if any(lim.share == 0 and lim.queued for lim in self._limiters.values()):
                self._soon.set()  # requests wait for a share: ask again after the gap
            await asyncio.sleep(LEASE_GAP_SECONDS)

    async def renew(self) -> None:
        """One report and its answer. When the limiter actor cannot be reached (it is restarting), the
        shares held stay as they are until the next report, which carries these outcomes too."""
        reports = {key: limiter.report() for key, limiter in self._limiters.items()}
        try:
            answers = await self._actor.lease.remote(self._owner, self._life, reports)
        except Exception:  # any Ray error: the next tick tries again
            self.failures += 1
            for key, report in reports.items():
                self._limiters[key].returned(report)
            return
        self.renewals += 1
        for key, answer in answers.items():
            limiter = self._limiters.get(key)
            if limiter is not None:
                limiter.granted(answer)

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None
