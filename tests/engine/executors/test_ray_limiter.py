"""The cluster-wide limit of the Ray executor (engine/executors/ray/limiter.py), without Ray: the
split of a limit by demand against its definition, the cluster limit against
:class:`AdaptiveLimiter` (the same rules, step for step, for one worker), the leases' invariant
(slots in use never more than the limit, also while shares move), restarted and silent workers, and
two workers' leases sharing one limit in front of a simulated server with a concurrency cap."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest

from touchstone.engine.executors.ray.limiter import (
    RATE_LIMITED,
    SILENT_SECONDS,
    SUCCESS,
    ClusterLimit,
    Lease,
    LeasedLimiter,
    LimiterActor,
    _Pool,
    split,
)
from touchstone.judges.limiter import AdaptiveLimiter, Ticket


# ------------------------------------------------------------------ split
@pytest.mark.parametrize("seed", range(200))
def test_split_is_water_filling(seed: int) -> None:
    rng = random.Random(seed)
    maximum = rng.randint(1, 200)
    demands = {f"w{k}": rng.choice([0, 1, rng.randint(0, 300)]) for k in range(rng.randint(1, 6))}
    shares = split(maximum, demands)
    assert set(shares) == set(demands)
    assert sum(shares.values()) == maximum
    assert all(v >= 0 for v in shares.values())
    if sum(demands.values()) <= maximum:  # everyone gets what it asks for, the rest spread evenly
        assert all(shares[w] >= demands[w] for w in demands)
        extra = [shares[w] - demands[w] for w in demands]
        assert max(extra) - min(extra) <= 1
    else:  # nobody gets more than it asks for; the unsatisfied are level, above every satisfied one
        assert all(shares[w] <= demands[w] for w in demands)
        short = [shares[w] for w in demands if shares[w] < demands[w]]
        assert short and max(short) - min(short) <= 1
        assert all(demands[w] <= max(short) for w in demands if shares[w] == demands[w])


def test_split_edge_cases() -> None:
    assert split(10, {}) == {}
    assert split(10, {"a": 0}) == {"a": 10}
    assert split(1, {"a": 5, "b": 5}) == {"a": 0, "b": 1}
    assert split(7, {"a": 100, "b": 2}) == {"a": 5, "b": 2}


# ------------------------------------------------------------------ cluster limit vs AdaptiveLimiter
class OneWorker:
    """An AdaptiveLimiter and a ClusterLimit driven by the same requests: for one worker whose level
    is its own, the cluster limit must move exactly as the local one."""

    def __init__(
        self, maximum: int, increase_per_round: float = 1.0, hold_rounds: float = 8.0, adaptive: bool = True
    ) -> None:
        self.local = AdaptiveLimiter(
            maximum, adaptive=adaptive, increase_per_round=increase_per_round, hold_rounds=hold_rounds
        )
        self.cluster = ClusterLimit(
            maximum, adaptive=adaptive, increase_per_round=increase_per_round, hold_rounds=hold_rounds
        )
        self.held: list[tuple[Ticket, int]] = []  # the ticket and the cluster generation it was sent in

    async def acquire(self) -> None:
        ticket = await self.local.acquire()
        self.held.append((ticket, self.cluster.generation))

    def release(self, k: int, outcome: str) -> None:
        ticket, generation = self.held.pop(k)
        admitted = sum(1 for seq in self.local._active if seq < ticket.seq)
        self.local.release(ticket, outcome)
        code = {"success": SUCCESS, "rate_limited": RATE_LIMITED}.get(outcome)
        if code is not None:
            self.cluster.outcome(generation, ticket.level, code, admitted)

    def detach(self, k: int) -> None:
        """The request stalls: its slot is handed on while it waits on (it is released later)."""
        self.local.detach(self.held[k][0])

    def assert_same(self) -> None:
        local, cluster = self.local, self.cluster
        assert (cluster.limit, cluster.threshold, cluster.min_limit) == (
            local.limit,
            local.threshold,
            local.min_limit,
        )
        assert (cluster.generation, cluster.decreases) == (local.generation, local.decreases)
        assert cluster.ignored_refusals == local.ignored_refusals
        assert cluster.current == local.current


@pytest.mark.parametrize("seed", range(60))
def test_cluster_limit_moves_as_the_adaptive_limiter(seed: int) -> None:
    rng = random.Random(seed)

    async def run() -> None:
        # the law's settings too: one law, whatever its parameters
        pair = OneWorker(rng.randint(1, 40), rng.choice([1.0, 0.5, 2.0]), rng.choice([8.0, 2.0]))
        cap = rng.randint(1, 30)  # a server that refuses above this many at once
        for _ in range(1500):
            if pair.local.in_flight < pair.local.current and rng.random() < 0.6:
                await pair.acquire()
            elif pair.held:
                k = rng.randrange(len(pair.held))
                over = pair.held[k][0].level > cap
                outcome = "rate_limited" if over and rng.random() < 0.9 else rng.choice(
                    ["success"] * 8 + ["rate_limited", "error"]
                )
                pair.release(k, outcome)
            pair.assert_same()

    asyncio.run(run())


@pytest.mark.parametrize("seed", range(200))
def test_cluster_limit_moves_as_the_adaptive_limiter_against_changing_servers(seed: int) -> None:
    """The same, against servers that change: phases of a different capacity (also above the
    maximum: the limit climbs back), of refusals at random (a flaky gateway), of errors and timeouts;
    stalled requests whose slots are handed on before their reply comes; and a fixed limit."""
    rng = random.Random(10_000 + seed)

    async def run() -> None:
        maximum = rng.choice([1, 2, rng.randint(3, 16), rng.randint(17, 96)])
        pair = OneWorker(
            maximum,
            rng.choice([0.25, 0.5, 1.0, 2.0, 4.0]),
            rng.choice([0.0, 1.0, 2.0, 8.0]),
            adaptive=rng.random() < 0.9,
        )
        steps = 0
        while steps < 1200:
            cap = rng.randint(1, maximum + 8)  # a phase: the server's capacity and its faults
            flaky, failing = rng.choice([0.0, 0.02, 0.3]), rng.choice([0.0, 0.05, 0.3])
            for _ in range(rng.randint(20, 300)):
                steps += 1
                action = rng.random()
                if action < 0.5 and pair.local.in_flight < pair.local.current:
                    await pair.acquire()
                elif action < 0.53 and pair.held:
                    pair.detach(rng.randrange(len(pair.held)))
                elif pair.held:
                    k = rng.randrange(len(pair.held))
                    over = pair.held[k][0].level > cap
                    if (over and rng.random() < 0.95) or rng.random() < flaky:  # capacity, or chance
                        outcome = "rate_limited"
                    elif rng.random() < failing:
                        outcome = rng.choice(["error", "timeout", "cancelled"])
                    else:
                        outcome = "success"
                    pair.release(k, outcome)
                pair.assert_same()
        if not pair.local.adaptive:
            assert pair.local.current == maximum and pair.local.decreases == 0

    asyncio.run(run())


def test_cluster_limit_rules() -> None:
    limit = ClusterLimit(64)
    limit.outcome(0, 100, RATE_LIMITED, admitted=60)  # nothing served yet: a capacity signal at once
    assert (limit.current, limit.decreases, limit.generation) == (32, 1, 1)
    limit.outcome(0, 90, RATE_LIMITED, admitted=60)  # sent before the decrease: the same burst
    assert limit.decreases == 1
    for _ in range(28):  # back up one slot per success to the level the server was serving
        limit.outcome(1, 40, SUCCESS)
    assert limit.current == 60
    limit.outcome(1, 40, RATE_LIMITED, admitted=39)  # at a level just served: not about capacity
    assert (limit.decreases, limit.ignored_refusals) == (1, 1)
    limit.outcome(1, 61, RATE_LIMITED, admitted=60)  # just above: one could be chance...
    assert limit.decreases == 1
    limit.outcome(1, 61, RATE_LIMITED, admitted=60)  # ...two are not
    assert (limit.current, limit.decreases) == (30, 2)
    fixed = ClusterLimit(8, adaptive=False)
    fixed.outcome(0, 9, RATE_LIMITED, admitted=8)
    assert (fixed.current, fixed.decreases) == (8, 0)


# ------------------------------------------------------------------ leases
def report(in_flight: int, waiting: int, **extra: Any) -> dict[str, Any]:
    return {"maximum": 16, "in_flight": in_flight, "waiting": waiting, **extra}


@pytest.mark.parametrize("seed", range(40))
def test_shares_never_exceed_the_limit(seed: int) -> None:
    """Workers that keep within their shares never have more in flight, all together, than the limit
    (the configured one, or a lower one the limit fell to, once what was in flight before drained)."""
    rng = random.Random(seed)
    pool = _Pool(16, adaptive=True, expected=3)
    workers = {f"w{k}": {"share": 0, "in_flight": 0} for k in range(3)}
    now = 0.0
    for _ in range(600):
        now += 0.01
        who = rng.choice(list(workers))
        w = workers[who]
        # between reports a worker ends some requests and starts others, within its share
        w["in_flight"] = rng.randint(0, max(w["in_flight"], w["share"]))
        done = [(pool.limit.generation, rng.randint(1, 20), rng.choice([SUCCESS] * 9 + [RATE_LIMITED]), 8)]
        answer = pool.lease(who, report(w["in_flight"], rng.randint(0, 20), done=done), now)
        w["share"] = answer["share"]
        others = sum(h.holding for owner, h in pool.holders.items() if owner != who)
        assert answer["share"] == 0 or answer["share"] + others <= pool.limit.current
        assert answer["others"] == others
        assert pool.holders[who].holding == max(w["share"], w["in_flight"])


def test_the_first_worker_leaves_the_others_a_share() -> None:
    pool = _Pool(16, adaptive=True, expected=2)
    assert pool.lease("a", report(0, 100), 0.0)["share"] == 8
    assert pool.lease("b", report(0, 100), 0.0)["share"] == 8


def test_a_restarted_worker_gives_back_what_its_previous_life_held() -> None:
    actor = LimiterActor(workers=2)
    assert actor.lease("a", "life-1", {"k": report(8, 50)})["k"]["share"] == 8
    assert actor.lease("b", "life-1", {"k": report(0, 50)})["k"]["share"] == 8
    # a's process died holding 8 requests; b asks for everything: a still holds its slots
    assert actor.lease("b", "life-1", {"k": report(8, 100)})["k"]["share"] == 8
    # a comes back (same actor id, new process) with nothing to do: its previous life's slots are free
    assert actor.lease("a", "life-2", {"k": report(0, 0)})["k"]["share"] == 0
    assert actor.lease("b", "life-1", {"k": report(8, 100)})["k"]["share"] == 16
    assert actor.state()["k"]["holding"] == 16


def test_a_silent_worker_loses_its_share() -> None:
    pool = _Pool(16, adaptive=True, expected=2)
    pool.lease("a", report(8, 50), 0.0)
    assert pool.lease("b", report(0, 100), 1.0)["share"] == 8
    assert pool.lease("b", report(8, 100), SILENT_SECONDS + 1.0)["share"] == 16
    assert "a" not in pool.holders


def test_a_long_pause_reaches_every_worker() -> None:
    actor = LimiterActor(workers=2)
    actor.lease("a", "1", {"k": report(0, 1, pause_until=1e12)})
    assert actor.lease("b", "1", {"k": report(0, 1)})["k"]["pause_until"] == 1e12


# ------------------------------------------------------------------ two workers, one simulated server
class InProcessActor:
    """A LimiterActor called as a Ray actor handle is (``actor.lease.remote(...)`` awaited)."""

    def __init__(self, actor: LimiterActor) -> None:
        self.actor = actor
        self.lease = self

    async def remote(self, *args: Any) -> Any:
        await asyncio.sleep(0)
        return self.actor.lease(*args)


class Server:
    """At most ``cap`` requests at once; beyond it a 429 at once."""

    def __init__(self, cap: int) -> None:
        self.cap, self.active, self.max_active, self.refused, self.served = cap, 0, 0, 0, 0

    async def request(self) -> bool:
        if self.active >= self.cap:
            self.refused += 1
            return False
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        await asyncio.sleep(0.002)
        self.active -= 1
        self.served += 1
        return True


async def drive(maximum: int, cap: int, rows: int) -> tuple[Server, LimiterActor, int]:
    actor = LimiterActor(workers=2)
    handle = InProcessActor(actor)
    leases = [Lease(handle, f"w{k}") for k in range(2)]
    limiters: list[LeasedLimiter] = [lease.limiter("k", maximum, True) for lease in leases]
    server = Server(cap)
    peak = 0

    async def row(limiter: LeasedLimiter) -> None:
        nonlocal peak
        while True:
            ticket = await limiter.acquire()
            peak = max(peak, sum(lim.in_flight for lim in limiters))
            ok = await server.request()
            limiter.release(ticket, "success" if ok else "rate_limited")
            if ok:
                return
            await asyncio.sleep(0.001)

    try:
        await asyncio.gather(*(row(limiters[i % 2]) for i in range(rows)))
    finally:
        for lease in leases:
            lease.close()
    return server, actor, peak


def test_two_workers_share_one_limit_at_the_servers_cap() -> None:
    server, _, peak = asyncio.run(drive(maximum=8, cap=8, rows=400))
    assert server.served == 400
    assert server.refused == 0  # the two workers together never asked for more than 8
    assert peak <= 8


def test_two_workers_find_a_lower_cap_together() -> None:
    server, actor, peak = asyncio.run(drive(maximum=32, cap=8, rows=600))
    assert server.served == 600
    state = actor.state()["k"]
    assert state["decreases"] >= 1 and state["min_limit"] < 32
    assert peak <= 32
