"""Rate-limit signals and caps: ``Retry-After`` / ``retry-after-ms`` / ``x-ratelimit-reset-*`` are
parsed and honoured, an exhausted window pauses new requests, and the requests-per-minute and
tokens-per-minute caps hold. Waits are checked from the fake server's own arrival times."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply, judge_handler

from touchstone.judges import JudgeSettings, OpenAIModelConfiguration, get_judge_client, judge_session
from touchstone.judges.limiter import TokenBucket
from touchstone.judges.providers.base import exhausted_pause, parse_duration, retry_after_seconds


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("1s", 1.0),
        ("6m0s", 360.0),
        ("20ms", 0.02),
        ("1.5", 1.5),
        ("1h2m3s", 3723.0),
        ("0.5s", 0.5),
        ("soon", None),
    ],
)
def test_parse_duration(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == (pytest.approx(seconds) if seconds is not None else None)


def test_retry_after_headers_in_order_of_precedence() -> None:
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == pytest.approx(0.25)
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    date = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= (retry_after_seconds({"retry-after": date}) or 0) <= 31
    resets = {"x-ratelimit-reset-requests": "2s", "x-ratelimit-reset-tokens": "6m0s"}
    assert retry_after_seconds(resets) == 360.0
    assert retry_after_seconds({}) is None and retry_after_seconds(None) is None


def test_exhausted_window_pause() -> None:
    assert exhausted_pause(
        {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "300ms"}
    ) == pytest.approx(0.3)
    assert (
        exhausted_pause({"x-ratelimit-remaining-requests": "12", "x-ratelimit-reset-requests": "1s"}) is None
    )
    assert exhausted_pause({}) is None


def _config(server: FakeOpenAIServer) -> OpenAIModelConfiguration:
    return OpenAIModelConfiguration(
        model="fake-judge", api_key="sk-rate-limit-test", base_url=server.base_url
    )


def _timed(server: FakeOpenAIServer, handler: Any) -> list[float]:
    arrivals: list[float] = []

    def wrapped(request: FakeRequest) -> Any:
        arrivals.append(time.monotonic())
        return handler(request)

    server.handler = wrapped
    return arrivals


@pytest.mark.parametrize(
    "headers",
    [{"retry-after-ms": "400"}, {"retry-after": "1"}, {"x-ratelimit-reset-requests": "400ms"}],
)
async def test_a_429_is_retried_after_the_wait_the_server_asks(
    fake_openai: FakeOpenAIServer, headers: dict[str, str]
) -> None:
    arrivals = _timed(
        fake_openai,
        lambda r: (
            Reply(status=429, error="Rate limit reached", headers=headers)
            if r.attempt == 1
            else judge_handler(r)
        ),
    )
    wait = retry_after_seconds(headers) or 0
    async with judge_session(JudgeSettings(cache=False, backoff_base=0.001)) as session:
        await get_judge_client(_config(fake_openai)).chat([{"role": "user", "content": "x"}])
    assert len(arrivals) == 2 and session.stats["rate_limited"] == 1
    assert arrivals[1] - arrivals[0] >= wait * 0.95  # honoured, not the tiny backoff


async def test_an_exhausted_window_pauses_the_next_request(fake_openai: FakeOpenAIServer) -> None:
    def handler(r: FakeRequest) -> Reply:
        first = r.attempt == 1 and "first" in r.prompt
        headers = (
            {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "400ms"} if first else {}
        )
        return Reply(content=judge_handler(r), headers=headers)

    arrivals = _timed(fake_openai, handler)
    async with judge_session(JudgeSettings(cache=False)):
        client = get_judge_client(_config(fake_openai))
        await client.chat([{"role": "user", "content": "first"}])
        await client.chat([{"role": "user", "content": "second"}])
    assert arrivals[1] - arrivals[0] >= 0.38


async def test_requests_per_minute_cap(fake_openai: FakeOpenAIServer) -> None:
    """rpm=600 is 10 per second with a burst of one second's worth: 25 requests cannot all arrive
    within 1.4 s, and no second-long window holds more than burst + rate."""
    arrivals = _timed(fake_openai, judge_handler)
    async with judge_session(JudgeSettings(cache=False, rpm=600, concurrency=32)):
        client = get_judge_client(_config(fake_openai))
        await asyncio.gather(*(client.chat([{"role": "user", "content": f"q{i}"}]) for i in range(25)))
    arrivals.sort()
    assert len(arrivals) == 25
    assert arrivals[-1] - arrivals[0] >= 1.4
    for start in arrivals:
        in_window = sum(1 for t in arrivals if start <= t < start + 1.0)
        assert in_window <= 10 + 10 + 1


async def test_token_bucket_takes_tokens_at_its_rate() -> None:
    bucket = TokenBucket(per_minute=6000)  # 100 per second, burst 100
    started = time.monotonic()
    for _ in range(3):
        await bucket.take(100)  # the first is the burst, the next two wait a second each
    assert time.monotonic() - started >= 1.9
    # a request larger than the burst is admitted at the burst size rather than waiting forever
    await bucket.take(10_000)


async def test_tokens_per_minute_cap(fake_openai: FakeOpenAIServer) -> None:
    arrivals = _timed(fake_openai, judge_handler)
    long = "word " * 400  # a prompt of a few hundred tokens
    async with judge_session(JudgeSettings(cache=False, tpm=60_000)) as session:  # 1,000 tokens per second
        client = get_judge_client(_config(fake_openai))
        await asyncio.gather(*(client.chat([{"role": "user", "content": f"{i} {long}"}]) for i in range(6)))
    arrivals.sort()
    assert len(arrivals) == 6 and session.stats["calls"] == 6
    assert arrivals[-1] - arrivals[0] >= 1.0  # ~6 x 400+ tokens at 1,000 per second, burst 1,000
