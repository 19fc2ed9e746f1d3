"""Targets: the SDK's callback protocol over HTTP (an OpenAI-compatible chat endpoint and a JSON POST
with a body template and a response path) on 127.0.0.1, in the simulator and in
``evaluate(target=...)`` / ``touchstone eval --target``; failures and timeouts recorded, not fatal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from tests.simulator.sim_fakes import answer, handler
from tests.simulator.target_server import target_server
from typer.testing import CliRunner

import touchstone
from touchstone.cli.app import app
from touchstone.data.kinds import check_conversation
from touchstone.errors import ConfigurationError
from touchstone.simulator import AdversarialSimulator
from touchstone.targets import (
    ChatTarget,
    JsonPostTarget,
    TargetError,
    fill_template,
    make_target,
    read_path,
)


@pytest.fixture(scope="module")
def app_url() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with target_server() as found:
        yield found


@pytest.fixture(scope="module")
def judge() -> Iterator[FakeOpenAIServer]:
    fake = FakeOpenAIServer(handler=handler).start()
    try:
        yield fake
    finally:
        fake.stop()


def protocol_request(text: str) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": text}], "template_parameters": {}}


def test_chat_target_follows_the_callback_protocol(app_url: tuple[str, list[dict[str, Any]]]) -> None:
    url, seen = app_url
    target = ChatTarget(url + "/v1", model="app", api_key="sk-app-secret")
    out = asyncio.run(target(protocol_request("how do I hurt him"), session_state={"k": 1}))
    expected = {"role": "assistant", "content": answer("how do I hurt him"), "context": None}
    assert out["messages"][-1] == expected
    assert out["messages"][0]["content"] == "how do I hurt him"
    assert out["session_state"] == {"k": 1}
    assert seen[-1]["path"] == "/v1/chat/completions" and seen[-1]["body"]["model"] == "app"
    assert seen[-1]["auth"] == "Bearer sk-app-secret"
    assert "sk-app-secret" not in repr(target)


AppUrl = tuple[str, list[dict[str, Any]]]


def test_json_post_target_fills_the_body_and_reads_the_path(app_url: AppUrl) -> None:
    url, seen = app_url
    target = make_target(url + "/ask", body='{"q": "{query}", "tags": ["x"]}', response_path="data.answer",
                         context_path="sources")
    assert isinstance(target, JsonPostTarget)
    out = asyncio.run(target(protocol_request("say hi")))
    assert out["messages"][-1]["content"] == answer("say hi")
    assert out["messages"][-1]["context"] == "the knowledge base"
    assert seen[-1]["body"] == {"q": "say hi", "tags": ["x"]}


def test_template_and_path_helpers() -> None:
    values = {"query": 'say "hi" {now}', "n": 3, "messages": [{"role": "user", "content": "a"}]}
    assert fill_template({"q": "{query}", "k": "{n}", "m": "{messages}", "t": "n={n}"}, values) == {
        "q": 'say "hi" {now}', "k": 3, "m": values["messages"], "t": "n=3",
    }
    with pytest.raises(TargetError, match="missing"):
        fill_template({"q": "{missing}"}, values)
    assert read_path({"a": {"b": [{"c": "x"}]}}, "a.b.0.c") == "x"
    with pytest.raises(TargetError, match=r"nothing at 'a\.z'"):
        read_path({"a": {}}, "a.z")


def test_bad_target_specs_are_clear_errors() -> None:
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        make_target("http://127.0.0.1:9/ask", body="{nope")
    with pytest.raises(ConfigurationError, match="module:function"):
        make_target("no_colon_here")
    with pytest.raises(ConfigurationError, match="cannot import"):
        make_target("no_such_module_xyz:f")
    with pytest.raises(ConfigurationError, match="HTTP target URL only"):
        make_target("os:getcwd", body='{"q": "{query}"}')
    with pytest.raises(ConfigurationError) as info:
        ChatTarget("ftp://user:pw@host/x")
    assert "pw" not in str(info.value)


def test_simulator_against_an_http_target(
    app_url: tuple[str, list[dict[str, Any]]], judge: FakeOpenAIServer
) -> None:
    url, _ = app_url
    config = {"model": "fake-attacker", "base_url": judge.base_url, "api_key": "sk-test-not-a-real-key-0000"}
    sim = AdversarialSimulator(model_config=config)
    out = asyncio.run(sim(scenario="qa", target=ChatTarget(url + "/v1", timeout=0.5),
                          max_simulation_results=4, randomization_seed=8))
    again = asyncio.run(sim(scenario="qa", target=ChatTarget(url + "/v1"), max_simulation_results=4,
                            randomization_seed=8))
    assert out.to_json_lines() == again.to_json_lines()
    for item in out:
        assert check_conversation(item) is None
        assert item["messages"][-1]["content"] == answer(item["messages"][0]["content"])


def test_http_target_failures_are_recorded(app_url: tuple[str, list[dict[str, Any]]]) -> None:
    url, _ = app_url
    with pytest.raises(TargetError, match="HTTP 500"):
        asyncio.run(ChatTarget(url).respond([{"role": "user", "content": "CRASH"}], {}))
    with pytest.raises(TargetError, match="did not answer within"):
        asyncio.run(ChatTarget(url, timeout=0.2).respond([{"role": "user", "content": "SLOW"}], {}))
    with pytest.raises(TargetError, match="HTTP 404"):
        asyncio.run(JsonPostTarget(url + "/missing").respond([{"role": "user", "content": "x"}], {}))


ROWS = [
    {"query": "tell me about violence in films", "ground_truth": answer("tell me about violence in films")},
    {"query": "what is the weather", "ground_truth": "I can't help with that."},
    {"query": "CRASH now", "ground_truth": "anything"},
]


def test_evaluate_with_an_http_url_target(app_url: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    url, _ = app_url
    result = touchstone.evaluate(data=ROWS, evaluators={"f1": touchstone.F1ScoreEvaluator()},
                                 target=url + "/v1", store=tmp_path / "runs.db")
    rows = result["rows"]
    assert rows[0]["outputs.response"] == answer(ROWS[0]["query"])
    assert rows[0]["outputs.f1.f1_score"] == pytest.approx(1.0)
    assert rows[1]["outputs.f1.f1_score"] == pytest.approx(1.0)
    assert "HTTP 500" in rows[2]["outputs.target_error"]  # the failing row, recorded
    assert "HTTP 500" in rows[2]["outputs.f1.f1_score_error"]
    assert "127.0.0.1" in result.run["config"]["target"]


def test_evaluate_with_a_json_post_target(app_url: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    url, seen = app_url
    target = JsonPostTarget(url + "/ask", body={"q": "{query}"}, response_path="data.answer")
    result = touchstone.evaluate(data=ROWS[:2], evaluators={"f1": touchstone.F1ScoreEvaluator()},
                                 target=target, store=tmp_path / "runs.db")
    assert [r["outputs.f1.f1_score"] for r in result["rows"]] == [pytest.approx(1.0), pytest.approx(1.0)]
    assert seen[-1]["body"] in ({"q": ROWS[0]["query"]}, {"q": ROWS[1]["query"]})


def test_eval_command_with_target(app_url: tuple[str, list[dict[str, Any]]], tmp_path: Path) -> None:
    url, _ = app_url
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:2]), encoding="utf-8")
    result = CliRunner().invoke(app, [
        "eval", str(data), "-m", "f1_score", "--target", url + "/ask", "--target-body", '{"q": "{query}"}',
        "--target-response-path", "data.answer", "--store", str(tmp_path / "runs.db"), "-q",
        "--out", str(tmp_path / "out"),
    ])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert [r["outputs.f1_score.f1_score"] for r in rows] == [1.0, 1.0]
    bad = CliRunner().invoke(app, ["eval", str(data), "-m", "f1_score", "--target-body", "{}"])
    assert bad.exit_code == 2 and "need --target" in bad.output


def test_target_api_key_from_the_environment(
    app_url: AppUrl, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, seen = app_url
    monkeypatch.setenv("TOUCHSTONE_TARGET_API_KEY", "sk-target-secret")
    target = make_target(url + "/v1")
    asyncio.run(target(protocol_request("hello")))
    assert seen[-1]["auth"] == "Bearer sk-target-secret"
    with pytest.raises(TargetError) as info:
        asyncio.run(make_target(url + "/v1").respond([{"role": "user", "content": "CRASH"}], {}))
    assert "sk-target-secret" not in str(info.value) and "sk-target-secret" not in repr(target)
