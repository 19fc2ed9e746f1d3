"""Structured-output negotiation: ``json_schema`` first, then llama.cpp's ``json_object`` with the
schema, then plain text; decided once per server and run (concurrent rows wait for the one probe
instead of each paying the rejection) and recorded in the run's provenance."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.judge_eval import SCHEMA, ToyJudgeEvaluator, expected_score, parse_score, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FaultPlan

from touchstone import evaluate
from touchstone.judges import JudgeSettings, OpenAIModelConfiguration, get_judge_client, judge_session

KEY = "sk-test-secret-key-abcdef123456"
FAST: dict[str, Any] = {"timeout": 2.0, "judge_settings": {"backoff_base": 0.001, "backoff_max": 0.01}}


def rows(n: int) -> list[dict[str, str]]:
    return [{"query": f"question {i}", "response": f"answer number {i}"} for i in range(n)]


def run(server: FakeOpenAIServer, tmp_path: Path, n: int = 20, **options: Any) -> Any:
    server.handler = toy_judge_handler
    config = {"model": "fake-judge", "base_url": server.base_url, "api_key": KEY}
    return evaluate(
        data=rows(n), evaluators={"judge": ToyJudgeEvaluator(config)}, store=tmp_path / "runs.db",
        cache=False, concurrency=8, **{**FAST, **options},
    )


def formats(server: FakeOpenAIServer) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in server.requests]


def check_scores(result: Any, n: int = 20) -> None:
    assert result.n_failed == 0
    assert [r.get("outputs.judge.toy_judge") for r in result.rows] == [
        expected_score(d["response"]) for d in rows(n)
    ]


def test_llama_cpp_server_gets_json_object_with_the_schema(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.rejected_formats = frozenset({"json_schema"})
    result = run(fake_openai, tmp_path)
    check_scores(result)
    # one rejected probe, then every row in llama.cpp's dialect: no row paid the rejection
    assert formats(fake_openai) == ["json_schema"] + ["json_object"] * 20
    assert all(r.body["response_format"]["schema"] == SCHEMA for r in fake_openai.requests[1:])
    assert [r.status for r in fake_openai.requests] == [500] + [200] * 20
    model = result.run["judge"]["models"][0]
    assert (
        model["structured_output"] == "json_object" and "response_format" not in model["unsupported_params"]
    )
    assert result.run["judge"]["stats"]["retries"] == 0


def test_server_taking_neither_format_gets_plain_text(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.rejected_formats = frozenset({"json_schema", "json_object"})
    result = run(fake_openai, tmp_path)
    check_scores(result)  # the free-text replies are parsed tolerantly
    assert formats(fake_openai) == ["json_schema", "json_object"] + [None] * 20
    model = result.run["judge"]["models"][0]
    assert model["structured_output"] == "text" and "response_format" in model["unsupported_params"]


def test_server_taking_json_schema_decides_it_on_the_first_reply(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = run(fake_openai, tmp_path)
    check_scores(result)
    assert formats(fake_openai) == ["json_schema"] * 20
    assert result.run["judge"]["models"][0]["structured_output"] == "json_schema"


def test_negotiation_survives_transient_faults(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """A probe that meets a transient fault retries; the waiting rows still never pay a rejection."""
    fake_openai.rejected_formats = frozenset({"json_schema"})
    fake_openai.faults = FaultPlan(rate=0.3, kinds=("500", "503", "drop"), attempts=1, seed=5)
    result = run(fake_openai, tmp_path)
    check_scores(result)
    assert formats(fake_openai).count("json_schema") <= 1 + fake_openai.faults_injected
    assert formats(fake_openai)[-20:] == ["json_object"] * 20
    assert result.run["judge"]["models"][0]["structured_output"] == "json_object"


@pytest.mark.parametrize("status", [400, 422])
async def test_a_4xx_naming_response_format_also_falls_back(
    status: int, fake_openai: FakeOpenAIServer
) -> None:
    from tests.fakes.openai_server import FakeRequest, Reply

    def handler(r: FakeRequest) -> Reply:
        if r.response_format == "json_schema":
            return Reply(status=status, error="'response_format.type' must be one of 'text', 'json_object'")
        return toy_judge_handler(r)

    fake_openai.handler = handler
    cfg = OpenAIModelConfiguration(model="fake-judge", api_key=KEY, base_url=fake_openai.base_url)
    settings = JudgeSettings(cache=False, timeout=2.0, backoff_base=0.001, backoff_max=0.01)
    async with judge_session(settings) as session:
        client = get_judge_client(cfg)
        replies = await asyncio.gather(
            *(
                client.chat(
                    [{"role": "user", "content": f"RESPONSE: r{i}"}], json_schema=SCHEMA, validate=parse_score
                )
                for i in range(10)
            )
        )
    assert all(reply.structured for reply in replies)  # llama.cpp's dialect still constrains the output
    assert [parse_score(r)[0] for r in replies] == [expected_score(f"r{i}") for i in range(10)]
    assert formats(fake_openai) == ["json_schema"] + ["json_object"] * 10
    assert session.info()["models"][0]["structured_output"] == "json_object" and session.aborted is None
