"""The adaptive concurrency limit: halves once per burst of 429s, climbs fast back to the level the
server was seen to admit, holds there, then probes slowly; never above the maximum nor below one."""

from __future__ import annotations

import asyncio

import pytest

from touchstone.judges.limiter import AdaptiveLimiter, Ticket


async def _take(limiter: AdaptiveLimiter, n: int) -> list[Ticket]:
    return [await limiter.acquire() for _ in range(n)]


async def test_halves_once_per_burst_and_learns_the_admitted_level() -> None:
    limiter = AdaptiveLimiter(128)
    tickets = await _take(limiter, 100)
    # the server serves the first 64 and refuses the rest: the first refusal halves the limit
    limiter.release(tickets[64], "rate_limited")
    assert limiter.limit == 64 and limiter.decreases == 1
    assert limiter.threshold == 64  # 64 requests sent before the refused one were still in flight
    for t in tickets[65:]:  # the same burst: no further decrease
        limiter.release(t, "rate_limited")
    assert limiter.limit == 64 and limiter.decreases == 1 and limiter.min_limit == 64


async def test_fast_climb_then_hold_then_slow_probe() -> None:
    limiter = AdaptiveLimiter(100, hold_rounds=2, increase_per_round=1.0)
    tickets = await _take(limiter, 41)
    limiter.release(tickets[40], "rate_limited")  # 40 admitted: limit 100 -> 50, threshold 50
    assert (limiter.limit, limiter.threshold) == (50, 50)
    later = await _take(limiter, 10)
    limiter.release(later[0], "rate_limited")  # a new burst; 40 sent before it still in flight
    assert (limiter.limit, limiter.threshold) == (25, 40)
    for t in tickets[:40] + later[1:]:  # 49 successes: +1 each up to 40, then it holds
        limiter.release(t, "success")
    assert limiter.limit == 40
    held = 0
    while limiter.limit == 40:  # hold_rounds (2) x 40 successes since the decrease: 31 more
        t = await limiter.acquire()
        limiter.release(t, "success")
        held += 1
    assert held == 2 * 40 - 49
    start = limiter.limit  # then about increase_per_round (1) slot per round of 40 successes
    for _ in range(40):
        t = await limiter.acquire()
        limiter.release(t, "success")
    assert limiter.limit - start == pytest.approx(1.0, abs=0.05)


async def test_bounds() -> None:
    limiter = AdaptiveLimiter(3)
    for _ in range(10):
        [t] = await _take(limiter, 1)
        limiter.release(t, "rate_limited")
    assert limiter.limit == 1 and limiter.current == 1
    for _ in range(1000):
        [t] = await _take(limiter, 1)
        limiter.release(t, "success")
    assert limiter.limit == 3


async def test_at_most_limit_holders_and_every_waiter_is_served() -> None:
    limiter = AdaptiveLimiter(2, adaptive=False)
    served: list[int] = []
    peak = 0

    async def worker(i: int) -> None:
        nonlocal peak
        ticket = await limiter.acquire()
        peak = max(peak, limiter.in_flight)
        served.append(i)
        await asyncio.sleep(0.001)
        limiter.release(ticket, "success")

    await asyncio.gather(*(worker(i) for i in range(20)))
    assert sorted(served) == list(range(20)) and peak == 2 and limiter.in_flight == 0


async def test_not_adaptive_keeps_the_limit() -> None:
    limiter = AdaptiveLimiter(8, adaptive=False)
    [t] = await _take(limiter, 1)
    limiter.release(t, "rate_limited")
    assert limiter.limit == 8 and limiter.decreases == 0
