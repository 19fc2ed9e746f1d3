"""The Anthropic adapter (``ProviderModelConfiguration(provider_name="anthropic", ...)``) through the
real ``anthropic`` SDK against the fake server's Messages API (``POST /v1/messages``): request shape,
the fallback from JSON-schema output to tolerantly parsed text, retries of 429/529/5xx and broken
connections with their accounting, errors that stop the run without showing the key, and a judge
metric end to end through ``evaluate()``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.fakes.judge_eval import SCHEMA, expected_score, parse_score, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, FaultPlan, Reply

import touchstone
from touchstone.evaluators.registry import create
from touchstone.judges import (
    ChatReply,
    JudgeCallError,
    JudgeSettings,
    ProviderModelConfiguration,
    RunAbortedError,
    get_judge_client,
    judge_session,
)
from touchstone.judges.accounting import current_usage

KEY = "sk-ant-api03-test-secret-abcdef123456"
MODEL = "claude-judge-test"
SYSTEM = "You are a strict judge. Rate the response from 1 to 5 and answer in JSON."


def fast(**kw: Any) -> JudgeSettings:
    base: dict[str, Any] = {"cache": False, "timeout": 0.5, "backoff_base": 0.001, "backoff_max": 0.01}
    base.update(kw)
    return JudgeSettings(**base)


def msgs(text: str, *, system: bool = True) -> list[dict[str, str]]:
    out = [{"role": "system", "content": SYSTEM}] if system else []
    return [*out, {"role": "user", "content": f"QUERY: q\nRESPONSE: {text}"}]


@pytest.fixture(autouse=True)
def _no_anthropic_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK reads credentials, base URL and extra headers from the environment: keep it out."""
    for name in (
        "ANTHROPIC_API_KEY",
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
        "ANTHROPIC_PROFILE",
        "ANTHROPIC_CONFIG_DIR",
    ):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server(fake_openai: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_openai.handler = toy_judge_handler
    return fake_openai


@pytest.fixture
def cfg(server: FakeOpenAIServer) -> ProviderModelConfiguration:
    return ProviderModelConfiguration(
        provider_name="anthropic", model=MODEL, api_key=KEY, base_url=server.endpoint
    )


def sent_key(request_headers: dict[str, str]) -> str:
    """The credential header as the installed SDK sends it (``x-api-key``, or a bearer token)."""
    return request_headers.get("x-api-key") or request_headers.get("authorization", "")


# ---------------------------------------------------------------------------- the fake endpoint itself
def test_fake_messages_endpoint_answers_and_rejects_like_the_api(server: FakeOpenAIServer) -> None:
    """What the adapter tests rely on: replies and errors in Anthropic's shapes, and the requests the
    real API refuses refused."""
    url = f"{server.endpoint}/v1/messages"
    headers = {"x-api-key": KEY, "anthropic-version": "2023-06-01"}
    good: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 50,
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "RESPONSE: hi"}],
    }
    with httpx.Client(timeout=5) as http:
        ok = http.post(url, json=good, headers=headers)
        assert ok.status_code == 200
        body = ok.json()
        assert set(body) == {
            "id",
            "type",
            "role",
            "model",
            "content",
            "stop_reason",
            "stop_sequence",
            "usage",
        }
        assert body["type"] == "message" and body["role"] == "assistant" and body["model"] == MODEL
        assert body["content"][0]["type"] == "text" and parse_score(
            ChatReply(text=body["content"][0]["text"], choices=[])
        )
        assert body["stop_reason"] == "end_turn" and body["usage"]["input_tokens"] > 0

        def rejected(payload: dict[str, Any], hdrs: dict[str, str] = headers) -> tuple[int, dict[str, Any]]:
            r = http.post(url, json=payload, headers=hdrs)
            return r.status_code, r.json()

        status, err = rejected(
            {**good, "messages": [{"role": "system", "content": SYSTEM}, *good["messages"]]}
        )
        assert status == 400 and err["type"] == "error" and err["error"]["type"] == "invalid_request_error"
        assert 'Unexpected role "system"' in err["error"]["message"]
        assert (
            rejected({k: v for k, v in good.items() if k != "max_tokens"})[1]["error"]["message"]
            == "max_tokens: Field required"
        )
        assert (
            "response_format: Extra inputs"
            in rejected({**good, "response_format": {"type": "json_object"}})[1]["error"]["message"]
        )
        assert rejected({**good, "temperature": 1.5})[0] == 400
        status, err = rejected(good, {"anthropic-version": "2023-06-01"})
        assert status == 401 and err["error"]["type"] == "authentication_error"

        server.faults = FaultPlan(rate=1.0, kinds=("529",), attempts=1)
        status, err = rejected({**good, "max_tokens": 51})
        assert status == 529 and err == {
            "type": "error",
            "error": {"type": "overloaded_error", "message": "Overloaded"},
        }
    assert server.requests[0].path == "/v1/messages" and server.requests[0].headers["x-api-key"] == KEY


# ---------------------------------------------------------------------------- calls
async def test_plain_call_system_temperature_and_usage(
    cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    server.handler = lambda r: Reply(content=json.dumps({"reason": "fine", "score": 4}), usage=(321, 17))
    usage: dict[str, Any] = {}
    token = current_usage.set(usage)
    try:
        async with judge_session(fast()) as session:
            client = get_judge_client(cfg)
            reply = await client.chat(msgs("hello"), max_tokens=300, temperature=0.0)
            default_length = await client.chat(msgs("again", system=False))
            info = session.info()
    finally:
        current_usage.reset(token)
    assert (
        reply.text == json.dumps({"reason": "fine", "score": 4}) and not reply.structured and not reply.cached
    )
    assert reply.model == MODEL and reply.finish_reason == "stop"  # Anthropic's end_turn, in OpenAI's words
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens) == (321, 17)

    first, second = server.requests
    assert first.path == "/v1/messages" and first.status == 200
    assert first.body["system"] == SYSTEM  # top level, not a message
    assert first.body["messages"] == [{"role": "user", "content": "QUERY: q\nRESPONSE: hello"}]
    assert (
        first.body["temperature"] == 0.0 and first.body["max_tokens"] == 300 and first.body["model"] == MODEL
    )
    assert set(first.body) == {"model", "system", "messages", "max_tokens", "temperature"}
    assert "system" not in second.body and second.body["max_tokens"] == 1024  # the adapter's default length
    assert KEY in sent_key(first.headers) and first.headers["anthropic-version"]
    assert default_length.text

    assert usage["calls"] == 2 == server.count
    assert usage["prompt_tokens"] == 642 and usage["completion_tokens"] == 34
    assert "retries" not in usage
    [model] = info["models"]
    assert model["provider"] == "anthropic" and model["model"] == MODEL
    assert model["host"] == server.endpoint.split("//", 1)[1]
    assert KEY not in json.dumps(info)


async def test_json_schema_falls_back_to_text_parsed_tolerantly(
    cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        first = await client.chat(msgs("a"), json_schema=SCHEMA, validate=parse_score)
        second = await client.chat(
            msgs("b"), json_schema=SCHEMA, logprobs=True, top_logprobs=3, validate=parse_score
        )
    for reply, text in ((first, "a"), (second, "b")):
        assert not reply.structured and reply.logprobs is None
        assert "```json" in reply.text  # free text around the JSON ...
        assert parse_score(reply)[0] == expected_score(text)  # ... read by the tolerant parser
    # nothing the Messages API would refuse is sent, and no call is counted that was not made
    assert all(
        not {"response_format", "logprobs", "top_logprobs", "seed"} & set(r.body) for r in server.requests
    )
    assert server.count == 2 == session.stats["calls"] and session.stats["retries"] == 0
    unsupported = session.info()["models"][0]["unsupported_params"]
    assert {"response_format", "logprobs", "top_logprobs", "seed"} <= set(unsupported)


async def test_the_adapter_builds_its_own_body(
    cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    """The Messages API body is the adapter's: even with its declared ``unsupported`` cleared, it never
    carries what the API has no equivalent for, so no call is refused and nothing falls back."""
    async with judge_session(fast(seed=7)) as session:
        backend = session.backend(cfg)
        backend.unsupported.clear()  # as if the adapter had not declared what it cannot send
        reply = await get_judge_client(cfg).chat(msgs("a"), json_schema=SCHEMA, validate=parse_score)
        again = await get_judge_client(cfg).chat(
            msgs("b"), json_schema=SCHEMA, logprobs=True, validate=parse_score
        )
    assert parse_score(reply)[0] == expected_score("a") and parse_score(again)[0] == expected_score("b")
    assert not reply.structured and server.count == 2
    assert all(not {"response_format", "seed", "logprobs"} & set(r.body) for r in server.requests)
    assert session.fallbacks == {} and session.aborted is None
    assert session.info()["models"][0]["structured_output"] == "text"


async def test_temperature_refused_by_a_model_is_dropped(
    cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    """Newer Claude models answer 400 "`temperature` is deprecated for this model."."""

    def handler(r: FakeRequest) -> Reply:
        if "temperature" in r.body:
            return Reply(status=400, error="`temperature` is deprecated for this model.")
        return toy_judge_handler(r)

    server.handler = handler
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        reply = await client.chat(msgs("a"), validate=parse_score)
        await client.chat(msgs("b"), validate=parse_score)
    assert parse_score(reply)[0] == expected_score("a")
    assert ["temperature" in r.body for r in server.requests] == [True, False, False]
    assert "temperature" in session.info()["models"][0]["unsupported_params"] and session.aborted is None


@pytest.mark.parametrize("kind", ["429", "529", "500", "503", "hang", "drop", "malformed", "schema"])
async def test_each_fault_kind_is_retried_and_counted(
    kind: str, cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    server.faults = FaultPlan(rate=1.0, kinds=(kind,), attempts=2)
    server.hang_seconds = 5
    server.retry_after = 0.01
    usage: dict[str, Any] = {}
    token = current_usage.set(usage)
    try:
        async with judge_session(fast(timeout=0.3)) as session:
            reply = await get_judge_client(cfg).chat(msgs("x"), json_schema=SCHEMA, validate=parse_score)
            model = session.info()["models"][0]
    finally:
        current_usage.reset(token)
    assert parse_score(reply)[0] == expected_score("x")
    assert server.count == 3 and server.faults_injected == 2
    assert usage["retries"] == 2 and usage["calls"] == 3 and session.stats["calls"] == 3
    if kind in ("429", "529"):  # a rate limit and "overloaded" both back off and lower concurrency
        assert usage["rate_limited"] == 2 and model["concurrency_decreases"] >= 1
    else:
        assert "rate_limited" not in usage
    if kind == "schema":
        assert usage["invalid_replies"] == 2
    if kind == "429":
        assert [r.status for r in server.requests] == [429, 429, 200]


async def test_retries_are_bounded(cfg: ProviderModelConfiguration, server: FakeOpenAIServer) -> None:
    server.faults = FaultPlan(rate=1.0, kinds=("500",), attempts=100)
    async with judge_session(fast(max_retries=2)) as session:
        with pytest.raises(JudgeCallError, match=r"after 3 attempts.*HTTP 500"):
            await get_judge_client(cfg).chat(msgs("x"))
    assert server.count == 3 and session.aborted is None  # the row fails, the run goes on


@pytest.mark.parametrize(
    ("status", "message", "cause"),
    [
        (401, f"invalid x-api-key: {KEY}", "authentication failed"),
        (403, "Your API key does not have permission to use the specified resource.", "permission denied"),
        (404, f"model: {MODEL}", "not found"),
    ],
)
async def test_fatal_errors_abort_without_the_key(
    status: int, message: str, cause: str, cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    server.handler = lambda r: Reply(status=status, error=message)
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        with pytest.raises(RunAbortedError) as info:
            await client.chat(msgs("x"))
        with pytest.raises(RunAbortedError):
            await client.chat(msgs("y"))  # stopped: no second request
    assert server.count == 1 and session.aborted is not None
    text = str(info.value)
    assert cause in text and MODEL in text and "127.0.0.1" in text
    assert KEY not in text and "abcdef123456" not in text


async def test_a_prompt_too_long_fails_only_its_row(
    cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    def handler(r: FakeRequest) -> Reply:
        if "huge" in r.last_user:
            return Reply(status=400, error="prompt is too long: 215000 tokens > 200000 maximum")
        return toy_judge_handler(r)

    server.handler = handler
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        with pytest.raises(JudgeCallError, match="prompt too long") as info:
            await client.chat(msgs("huge"))
        assert info.value.kind == "row"
        assert parse_score(await client.chat(msgs("small"), validate=parse_score))
    assert session.aborted is None and server.count == 2


async def test_missing_key_aborts_with_what_to_set(
    server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    no_key = ProviderModelConfiguration(provider_name="anthropic", model=MODEL, base_url=server.endpoint)
    async with judge_session(fast()):
        with pytest.raises(
            RunAbortedError, match="no Anthropic API key: set ANTHROPIC_API_KEY or pass api_key"
        ):
            await get_judge_client(no_key).chat(msgs("x"))
    assert server.count == 0
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)  # the environment's key is used when none is passed
    async with judge_session(fast()):
        await get_judge_client(no_key).chat(msgs("x"))
    assert server.count == 1 and KEY in sent_key(server.requests[0].headers)


async def test_n_above_one_is_refused_clearly(
    cfg: ProviderModelConfiguration, server: FakeOpenAIServer
) -> None:
    async with judge_session(fast()):
        with pytest.raises(RunAbortedError, match="n > 1 is not supported"):
            await get_judge_client(cfg).chat(msgs("x"), n=3)
    assert server.count == 0


# ---------------------------------------------------------------------------- a judge metric end to end
def test_groundedness_through_evaluate(server: FakeOpenAIServer, tmp_path: Path) -> None:
    server.handler = lambda r: {"reason": "Every claim is in the context.", "score": 4}
    server.faults = FaultPlan(rate=0.5, kinds=("429", "529", "500"), attempts=1, seed=1)
    server.retry_after = 0.01
    cfg = {"provider_name": "anthropic", "model": MODEL, "api_key": KEY, "base_url": server.endpoint}
    data = [
        {"query": f"Where is landmark {i}?", "response": f"Landmark {i} is in Paris.",
         "context": f"Landmark {i} stands in Paris."}
        for i in range(8)
    ]
    result = touchstone.evaluate(
        data=data,
        evaluators={"grounded": create("groundedness", model_config=cfg)},
        store=tmp_path / "runs.db",
        timeout=0.5,
        judge_settings={"backoff_base": 0.001, "backoff_max": 0.01},
    )
    assert result.n_failed == 0
    assert [r["outputs.grounded.groundedness"] for r in result.rows] == [4] * len(data)
    props = result.rows[0]["outputs.grounded.groundedness_properties"]
    assert props["structured_output"] is False and props["judge_model"] == MODEL and not props["repaired"]

    injected = server.faults_injected
    assert 0 < injected < len(data)
    judge = result.run["judge"]
    assert judge["models"][0]["provider"] == "anthropic"
    assert judge["stats"]["calls"] == server.count == len(data) + injected
    assert judge["stats"]["retries"] == injected and result.run["usage"]["calls"] == server.count
    for r in server.requests:  # the metric's system prompt went top level; no refused parameter was sent
        assert r.body.get("system") and all(m["role"] in ("user", "assistant") for m in r.body["messages"])
        assert "response_format" not in r.body
    assert KEY.encode() not in (tmp_path / "runs.db").read_bytes()
    assert KEY.encode() not in Path(os.environ["TOUCHSTONE_CACHE"]).read_bytes()
