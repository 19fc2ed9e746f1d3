"""The engine's run and score context: the engine opens the run's judge session itself (run_hooks(),
no registration at import time), and a score's judge calls are accounted in its usage dict."""

from __future__ import annotations

import asyncio
from typing import Any

from touchstone.engine.context import RunContext, add_usage, current_usage, run_hooks
from touchstone.judges import get_judge_client
from touchstone.judges.session import current_session, judge_run_scope


def test_the_run_scopes_are_the_judge_session() -> None:
    assert run_hooks() == [judge_run_scope]


def test_the_judge_session_of_a_run_takes_its_options_and_reports_into_its_info() -> None:
    ctx = RunContext("run-1", store=None, evaluators={}, options={"concurrency": 3, "dry_run": True})
    usage: dict[str, Any] = {}

    async def run() -> None:
        async with judge_run_scope(ctx) as session:
            assert current_session() is session and session.settings.concurrency == 3
            token = current_usage.set(usage)
            try:
                await get_judge_client({"model": "m"}).chat([{"role": "user", "content": "hello"}])
            finally:
                current_usage.reset(token)
        assert current_session() is None

    asyncio.run(run())
    judge = ctx.info["judge"]
    assert judge["stats"]["calls"] == usage["calls"] == 1 and judge["models"][0]["model"] == "m"
    assert judge["seconds"] >= 0 and usage["prompt_tokens"] > 0


def test_a_run_without_judge_calls_reports_no_judge() -> None:
    ctx = RunContext("run-2", store=None, evaluators={})

    async def run() -> None:
        async with judge_run_scope(ctx):
            pass

    asyncio.run(run())
    assert "judge" not in ctx.info


def test_usage_is_added_to_the_current_score_only() -> None:
    add_usage(calls=1)  # outside a score: nowhere to add, no error
    usage: dict[str, Any] = {"calls": 1}
    token = current_usage.set(usage)
    try:
        add_usage(calls=2, prompt_tokens=10)
    finally:
        current_usage.reset(token)
    assert usage == {"calls": 3, "prompt_tokens": 10}
