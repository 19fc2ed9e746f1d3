"""The judge client against the loopback fake server: every fault kind, structured output and its
fallback, log-probabilities, reasoning models, Azure paths, embeddings, caching and accounting."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tests.fakes.judge_eval import SCHEMA, expected_score, parse_score, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, FaultPlan, Reply

from touchstone.errors import RunAbortedError
from touchstone.judges import (
    AzureOpenAIModelConfiguration,
    JudgeCallError,
    JudgeSettings,
    OpenAIModelConfiguration,
    as_model_config,
    get_judge_client,
    judge_session,
)
from touchstone.judges.accounting import current_usage

KEY = "sk-test-secret-key-abcdef123456"


def fast(**kw: Any) -> JudgeSettings:
    """Settings for tests: short timeout and backoff, no cache unless asked."""
    base: dict[str, Any] = {"cache": False, "timeout": 0.5, "backoff_base": 0.001, "backoff_max": 0.01}
    base.update(kw)
    return JudgeSettings(**base)


def msgs(text: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": f"QUERY: q\nRESPONSE: {text}"}]


@pytest.fixture(autouse=True, params=["aiohttp", "httpx"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs over both HTTP stacks the ``openai`` client can use."""
    monkeypatch.setenv("TOUCHSTONE_HTTP_TRANSPORT", request.param)
    return str(request.param)


@pytest.fixture
def cfg(fake_openai: FakeOpenAIServer) -> OpenAIModelConfiguration:
    fake_openai.handler = toy_judge_handler
    return OpenAIModelConfiguration(model="fake-judge", api_key=KEY, base_url=fake_openai.base_url)


async def test_plain_call_structured_and_usage(
    cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    usage: dict[str, Any] = {}
    token = current_usage.set(usage)
    try:
        async with judge_session(fast()):
            reply = await get_judge_client(cfg).chat(msgs("hello"), json_schema=SCHEMA)
    finally:
        current_usage.reset(token)
    assert reply.structured and not reply.cached
    assert parse_score(reply)[0] in range(1, 6)
    body = fake_openai.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["schema"] == SCHEMA
    assert body["temperature"] == 0.0 and body["model"] == "fake-judge"
    assert usage["calls"] == 1 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert "retries" not in usage


async def test_transport_choice_is_used_and_reported(
    transport: str, cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    async with judge_session(fast()) as session:
        await get_judge_client(cfg).chat(msgs("hello"))
        [model] = session.info()["models"]
        backend = session.backend(as_model_config(cfg))
        assert model["http_transport"] == transport == backend.transport  # type: ignore[attr-defined]
        # aiohttp: the body goes straight over an aiohttp session; httpx: through the openai client
        sender = backend.sender  # type: ignore[attr-defined]
        if transport == "aiohttp":
            assert sender is not None and backend.client is None  # type: ignore[attr-defined]
            assert "aiohttp" in type(sender._session).__module__
        else:
            stack = type(backend.client._client._transport).__module__  # type: ignore[attr-defined]
            assert sender is None and "httpx" in stack
    assert fake_openai.count == 1


def test_unknown_transport_is_a_configuration_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from touchstone.errors import ConfigurationError
    from touchstone.judges.providers.openai_compat import resolve_transport

    with pytest.raises(ConfigurationError, match="http_transport must be one of"):
        JudgeSettings(http_transport="curl").validate()
    monkeypatch.setenv("TOUCHSTONE_HTTP_TRANSPORT", "curl")
    with pytest.raises(ConfigurationError, match="TOUCHSTONE_HTTP_TRANSPORT"):
        resolve_transport("auto")
    assert resolve_transport("httpx") == "httpx"


@pytest.mark.parametrize("kind", ["429", "500", "502", "503", "hang", "drop", "malformed", "schema"])
async def test_each_fault_kind_is_retried(
    kind: str, cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.faults = FaultPlan(rate=1.0, kinds=(kind,), attempts=2)
    fake_openai.hang_seconds = 5
    usage: dict[str, Any] = {}
    token = current_usage.set(usage)
    try:
        # only a hang needs the timeout to end it; elsewhere a roomy one, so that a loaded machine's slow
        # reply is not a third fault that the exact counts below would not expect
        async with judge_session(fast(timeout=1.0 if kind == "hang" else 10.0)):
            reply = await get_judge_client(cfg).chat(msgs("x"), json_schema=SCHEMA, validate=parse_score)
    finally:
        current_usage.reset(token)
    assert parse_score(reply)[0] == expected_score("x")
    assert fake_openai.count == 3 and fake_openai.faults_injected == 2
    assert usage["retries"] == 2 and usage["calls"] == 3
    if kind == "429":
        assert usage["rate_limited"] == 2
    if kind == "schema":
        assert usage["invalid_replies"] == 2


async def test_retries_are_bounded(cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.faults = FaultPlan(rate=1.0, kinds=("503",), attempts=100)
    async with judge_session(fast(max_retries=3)) as session:
        with pytest.raises(JudgeCallError, match=r"after 4 attempts.*503"):
            await get_judge_client(cfg).chat(msgs("x"))
    assert fake_openai.count == 4
    assert session.aborted is None  # a transient failure fails the row, not the run


@pytest.mark.parametrize(
    ("status", "message", "code", "cause"),
    [
        (401, f"Incorrect API key provided: {KEY}", "invalid_api_key", "authentication failed"),
        (403, "not allowed", None, "permission denied"),
        (404, "The model `fake-judge` does not exist", "model_not_found", "not found"),
        (400, "Unrecognized request argument supplied: foo", None, "rejected as invalid"),
        (
            429,
            "You exceeded your current quota, please check your plan",
            "insufficient_quota",
            "quota exhausted",
        ),
    ],
)
async def test_fatal_errors_abort_without_retry_or_key(
    status: int,
    message: str,
    code: str | None,
    cause: str,
    cfg: OpenAIModelConfiguration,
    fake_openai: FakeOpenAIServer,
) -> None:
    fake_openai.handler = lambda r: Reply(status=status, error=message, error_code=code)
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        with pytest.raises(RunAbortedError) as info:
            await client.chat(msgs("x"))
        # every later call stops at once, without a request
        with pytest.raises(RunAbortedError):
            await client.chat(msgs("y"))
    assert fake_openai.count == 1
    text = str(info.value)
    assert cause in text and "fake-judge" in text and "127.0.0.1" in text
    assert KEY not in text and "abcdef123456" not in text
    assert session.aborted is not None


async def test_content_filter_fails_only_the_row(
    cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    def handler(r: FakeRequest) -> Reply:
        if "bad" in r.last_user:
            return Reply(status=400, error="The response was filtered", error_code="content_filter")
        return toy_judge_handler(r)

    fake_openai.handler = handler
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        with pytest.raises(JudgeCallError, match="content_filter"):
            await client.chat(msgs("bad"))
        assert parse_score(await client.chat(msgs("good")))
    assert session.aborted is None and fake_openai.count == 2


async def test_structured_output_fallback(
    cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.supports_json_schema = False  # json_schema: HTTP 400 naming response_format
    fake_openai.rejected_formats = frozenset({"json_object"})  # json_object: llama.cpp's HTTP 500
    async with judge_session(fast()) as session:
        client = get_judge_client(cfg)
        first = await client.chat(msgs("a"), json_schema=SCHEMA, validate=parse_score)
        second = await client.chat(msgs("b"), json_schema=SCHEMA, validate=parse_score)
    assert not first.structured and not second.structured
    assert "```json" in first.text and parse_score(first)[0] in range(1, 6)  # tolerant parsing of free text
    # one rejected request per structured mode, then response_format is never sent again
    assert [(r.body.get("response_format") or {}).get("type") for r in fake_openai.requests] == [
        "json_schema", "json_object", None, None]
    assert session.info()["models"][0]["unsupported_params"] == ["response_format"]
    assert session.info()["models"][0]["structured_output"] == "text"


async def test_logprobs_and_n(cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = lambda r: Reply(
        content=["4", "5"], logprobs=[("4", -0.2, [("4", -0.2), ("5", -1.8), ("3", -3.0)])]
    )
    async with judge_session(fast()):
        reply = await get_judge_client(cfg).chat(msgs("a"), logprobs=True, top_logprobs=2, n=2)
    assert reply.choices == ["4", "5"] and reply.text == "4"
    assert reply.logprobs is not None and reply.logprobs[0].token == "4"
    assert reply.logprobs[0].logprob == pytest.approx(-0.2)
    assert reply.logprobs[0].top == [("4", -0.2), ("5", -1.8)]
    body = fake_openai.requests[0].body
    assert body["logprobs"] is True and body["top_logprobs"] == 2 and body["n"] == 2


async def test_logprobs_dropped_when_unsupported(
    cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    fake_openai.supports_logprobs = False
    async with judge_session(fast()):
        reply = await get_judge_client(cfg).chat(msgs("a"), logprobs=True, top_logprobs=3)
    assert reply.logprobs is None and reply.text
    assert (
        "logprobs" not in fake_openai.requests[-1].body
        and "top_logprobs" not in fake_openai.requests[-1].body
    )


async def test_reasoning_model_params(fake_openai: FakeOpenAIServer) -> None:
    cfg = {"model": "o4-mini", "base_url": fake_openai.base_url, "api_key": KEY, "is_reasoning_model": True}
    async with judge_session(fast(seed=7)):
        await get_judge_client(cfg).chat(msgs("a"), max_tokens=500, temperature=0.0)
    body = fake_openai.requests[0].body
    assert "temperature" not in body and "top_p" not in body and "max_tokens" not in body
    assert body["max_completion_tokens"] == 500 and body["seed"] == 7


async def test_max_tokens_switches_when_rejected(
    cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    def handler(r: FakeRequest) -> Reply:
        if "max_tokens" in r.body:
            return Reply(
                status=400,
                error="Unsupported parameter: 'max_tokens' is not supported with this model. "
                "Use 'max_completion_tokens' instead.",
                error_param="max_tokens",
            )
        return Reply(content="ok")

    fake_openai.handler = handler
    async with judge_session(fast()):
        reply = await get_judge_client(cfg).chat(msgs("a"), max_tokens=50)
    assert reply.text == "ok" and fake_openai.requests[-1].body["max_completion_tokens"] == 50


async def test_azure_configuration(fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_openai.handler = toy_judge_handler
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_API_VERSION", "2024-06-01")
    cfg = AzureOpenAIModelConfiguration(azure_endpoint=fake_openai.endpoint, azure_deployment="judge-dep")
    async with judge_session(fast()):
        reply = await get_judge_client(cfg).chat(msgs("a"), json_schema=SCHEMA)
    assert parse_score(reply)
    rec = fake_openai.requests[0]
    assert rec.path == "/openai/deployments/judge-dep/chat/completions"


async def test_cache_hits_and_in_flight_sharing(fake_openai: FakeOpenAIServer, tmp_path: Any) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.latency = 0.05
    cfg = {"model": "fake-judge", "base_url": fake_openai.base_url, "api_key": KEY}
    settings = fast(cache=True, cache_path=tmp_path / "c.db")
    async with judge_session(settings) as s1:
        client = get_judge_client(cfg)
        replies = await asyncio.gather(*(client.chat(msgs("same")) for _ in range(5)))
    assert fake_openai.count == 1 and s1.stats["cache_hits"] == 4
    assert len({r.text for r in replies}) == 1
    async with judge_session(settings) as s2:
        again = await get_judge_client(cfg).chat(msgs("same"))
        other = await get_judge_client(cfg).chat(
            msgs("same"), max_tokens=10
        )  # another parameter: another entry
    assert again.cached and again.text == replies[0].text and not other.cached
    assert fake_openai.count == 2 and s2.stats["calls"] == 1
    raw = (tmp_path / "c.db").read_bytes()
    assert KEY.encode() not in raw


async def test_invalid_cached_reply_is_not_trusted(fake_openai: FakeOpenAIServer, tmp_path: Any) -> None:
    cfg = {"model": "fake-judge", "base_url": fake_openai.base_url, "api_key": KEY}
    settings = fast(cache=True, cache_path=tmp_path / "c.db")
    fake_openai.handler = lambda r: Reply(content="no json here")
    async with judge_session(settings):
        await get_judge_client(cfg).chat(msgs("a"))  # cached without validation
    fake_openai.handler = toy_judge_handler
    async with judge_session(settings):
        reply = await get_judge_client(cfg).chat(msgs("a"), validate=parse_score)
    assert not reply.cached and fake_openai.count == 2


async def test_embeddings_batched_and_cached(fake_openai: FakeOpenAIServer, tmp_path: Any) -> None:
    cfg = {"model": "text-embedding-3-small", "base_url": fake_openai.base_url, "api_key": KEY}
    texts = [f"text {i}" for i in range(25)] + ["text 0"]
    settings = fast(cache=True, cache_path=tmp_path / "c.db", embed_batch_size=10)
    async with judge_session(settings) as s:
        vectors = await get_judge_client(cfg).embed(texts)
    assert len(vectors) == 26 and vectors[0] == vectors[-1] and vectors[0] != vectors[1]
    assert fake_openai.count_path("/embeddings") == 3  # 25 distinct texts in batches of 10
    assert s.stats["cost_usd"] > 0
    async with judge_session(settings):
        again = await get_judge_client(cfg).embed(texts[:5], model="text-embedding-3-small")
    assert again == vectors[:5] and fake_openai.count == 3


async def test_standalone_client_outside_a_run(
    cfg: OpenAIModelConfiguration, fake_openai: FakeOpenAIServer
) -> None:
    client = get_judge_client(cfg, settings=fast())
    reply = await client.chat(msgs("z"), json_schema=SCHEMA)
    assert parse_score(reply) and fake_openai.count == 1


async def test_adaptive_concurrency_under_a_server_cap(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.latency = 0.02
    fake_openai.max_concurrency = 4
    fake_openai.retry_after = 0.01
    cfg = {"model": "fake-judge", "base_url": fake_openai.base_url, "api_key": KEY}
    async with judge_session(fast(concurrency=16)) as session:
        client = get_judge_client(cfg)
        replies = await asyncio.gather(*(client.chat(msgs(f"r{i}"), validate=parse_score) for i in range(60)))
    assert len(replies) == 60 and all(parse_score(r) for r in replies)
    assert fake_openai.rejected_busy > 0 and session.stats["rate_limited"] == fake_openai.rejected_busy
    model = session.info()["models"][0]
    assert model["concurrency_decreases"] >= 1 and model["concurrency_min"] < 16
    assert fake_openai.max_active <= 4


async def test_missing_key_for_openai_aborts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    async with judge_session(fast()):
        with pytest.raises(RunAbortedError, match="OPENAI_API_KEY"):
            await get_judge_client({"model": "gpt-4o-mini"}).chat(msgs("a"))
