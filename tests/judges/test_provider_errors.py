"""The provider layer's typed errors: how HTTP failures are classified, what each class makes the
session do, a server that fails every first call the same way stopping the run in a few requests,
and prompt log-probabilities (``/v1/completions``) going through the same session."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from tests.fakes.judge_eval import ToyJudgeEvaluator, expected_score, parse_score, toy_judge_handler
from tests.fakes.openai_server import (
    FakeOpenAIServer,
    FakeRequest,
    FaultPlan,
    Reply,
    _tokens,
    fake_token_logprob,
)

from touchstone import evaluate
from touchstone.errors import RunAbortedError
from touchstone.judges import (
    JudgeCallError,
    JudgeSettings,
    OpenAIModelConfiguration,
    get_judge_client,
    judge_session,
)
from touchstone.judges.errors import (
    FatalProviderError,
    ProviderError,
    QuotaExhausted,
    RateLimited,
    RowRejected,
    TransientError,
    UnsupportedParameter,
)
from touchstone.judges.providers.base import classify_status

KEY = "sk-test-secret-key-abcdef123456"
FAST: dict[str, Any] = {"timeout": 2.0, "judge_settings": {"backoff_base": 0.001, "backoff_max": 0.01}}
SENT = {
    "model": "m",
    "messages": [],
    "response_format": {"type": "json_schema", "json_schema": {}},
    "seed": 1,
}


def settings(**kw: Any) -> JudgeSettings:
    return JudgeSettings(**{"cache": False, "timeout": 2.0, "backoff_base": 0.001, "backoff_max": 0.01, **kw})


def err(message: str, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "code": code, "param": param}}


@pytest.mark.parametrize(
    ("status", "body", "cls", "kind"),
    [
        (429, err("Rate limit reached", "rate_limit_exceeded"), RateLimited, "rate_limit"),
        (429, err("You exceeded your current quota", "insufficient_quota"), QuotaExhausted, "quota"),
        (500, err("injected server error"), TransientError, "transient"),
        (503, err("overloaded"), TransientError, "transient"),
        (400, err("filtered", "content_filter"), RowRejected, "row"),
        (400, err("This model's maximum context length is 8192 tokens"), RowRejected, "row"),
        (
            400,
            err("Unrecognized request argument supplied: seed", param="seed"),
            UnsupportedParameter,
            "unsupported",
        ),
        (401, err("Incorrect API key"), FatalProviderError, "fatal"),
        (404, err("The model does not exist"), FatalProviderError, "fatal"),
        (400, err("Unrecognized request argument supplied: foo"), FatalProviderError, "fatal"),
    ],
)
def test_classification_gives_the_error_class(
    status: int, body: dict[str, Any], cls: type, kind: str
) -> None:
    error = classify_status(status, body, {"retry-after-ms": "250"}, SENT)
    assert type(error) is cls and isinstance(error, ProviderError)
    assert error.kind == kind and error.status == status
    if cls is RateLimited:
        assert error.retry_after == pytest.approx(0.25)


@pytest.mark.parametrize("status", [400, 422, 500])
def test_a_rejected_response_format_names_the_refused_mode(status: int) -> None:
    body = err("1 validation error for CreateChatCompletionRequest\nresponse_format.type\n  Input should be "
               "'text' or 'json_object' [type=literal_error, input_value='json_schema', input_type=str]")
    error = classify_status(status, body, {}, SENT)
    assert isinstance(error, UnsupportedParameter)
    assert error.param == "response_format" and error.value == "json_schema"
    # without response_format in the request the same 500 is a server fault
    plain = classify_status(500, body, {}, {"model": "m", "messages": []})
    assert isinstance(plain, TransientError)


def test_a_redacted_message_leaves_no_copy() -> None:
    error = TransientError(f"bad key {KEY}", 500)
    error.message = "bad key ***"
    assert KEY not in str(error) and KEY not in repr(error) and KEY not in str(error.args)


# --------------------------------------------------------------------------- deterministic errors stop early
def run(server: FakeOpenAIServer, tmp_path: Path, n: int = 20, **options: Any) -> Any:
    config = {"model": "fake-judge", "base_url": server.base_url, "api_key": KEY}
    return evaluate(data=[{"query": f"q{i}", "response": f"answer {i}"} for i in range(n)],
                    evaluators={"judge": ToyJudgeEvaluator(config)}, store=tmp_path / "runs.db",
                    cache=False, **{**FAST, **options})


@pytest.mark.parametrize(
    ("status", "message", "shown"),
    [
        (500, "llama_decode returned -3", "HTTP 500"),
        (400, "'messages' must contain the word 'json'", "HTTP 400"),
    ],
)
def test_the_same_error_on_every_first_call_stops_the_run(
    status: int, message: str, shown: str, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.handler = lambda r: Reply(status=status, error=f"{message} (key {KEY})")
    with pytest.raises(RunAbortedError) as info:
        run(fake_openai, tmp_path, concurrency=16)
    assert fake_openai.count <= 8  # a few requests, not every row's retries
    text = str(info.value)
    assert shown in text and message in text and "fake-judge" in text and "127.0.0.1" in text
    assert KEY not in text and "abcdef123456" not in text


async def test_the_same_500_after_a_success_keeps_its_retries(fake_openai: FakeOpenAIServer) -> None:
    """Once the server has answered, a repeated 500 may be load: the row retries, then fails alone."""
    answered: list[int] = []

    def handler(r: FakeRequest) -> Reply:
        if not answered:
            answered.append(1)
            return toy_judge_handler(r)
        return Reply(status=500, error="llama_decode returned -3")

    fake_openai.handler = handler
    cfg = OpenAIModelConfiguration(model="fake-judge", api_key=KEY, base_url=fake_openai.base_url)
    async with judge_session(settings(max_retries=5)) as session:
        client = get_judge_client(cfg)
        assert parse_score(await client.chat([{"role": "user", "content": "RESPONSE: a"}]))
        with pytest.raises(JudgeCallError, match=r"after 6 attempts.*HTTP 500") as info:
            await client.chat([{"role": "user", "content": "RESPONSE: b"}])
    assert info.value.kind == "transient" and session.aborted is None and fake_openai.count == 7


def test_varying_first_faults_keep_their_retries(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.faults = FaultPlan(rate=1.0, kinds=("500", "502", "503"), attempts=2, seed=1)
    result = run(fake_openai, tmp_path, concurrency=8)
    assert result.n_failed == 0
    assert [r.get("outputs.judge.toy_judge") for r in result.rows] == [
        expected_score(f"answer {i}") for i in range(20)
    ]


# --------------------------------------------------------------------------- prompt log-probabilities
async def test_completions_logprobs_through_the_session(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    fake_openai.faults = FaultPlan(rate=1.0, kinds=("503",), attempts=1)
    cfg = OpenAIModelConfiguration(model="fake-lm", api_key=KEY, base_url=fake_openai.base_url)
    prompts = ["the cat sat", "on the mat", "the cat sat"]
    async with judge_session(settings(cache=True, cache_path=str(tmp_path / "c.db"))) as session:
        client = get_judge_client(cfg)
        first = await client.completions_logprobs(prompts)
        again = await client.completions_logprobs(prompts[:2])
    assert first[0] == first[2] and again == first[:2]
    for prompt, values in zip(prompts, first, strict=True):
        tokens = _tokens(prompt)
        assert values[0] is None  # the first token has no log-probability
        assert values[1:] == pytest.approx([fake_token_logprob(t) for t in tokens[1:]])
    calls = [r for r in fake_openai.requests if r.path.endswith("/completions")]
    assert len(calls) == 2 and calls[-1].body["prompt"] == ["the cat sat", "on the mat"]  # one 503, one retry
    assert calls[-1].body["echo"] is True and calls[-1].body["max_tokens"] == 0
    assert (
        session.stats["retries"] == 1
        and session.stats["cache_hits"] == 2
        and session.stats["prompt_tokens"] > 0
    )


async def test_completions_without_prompt_logprobs_stop_the_run(
    fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fakes import openai_server

    # a server whose completions carry no token_logprobs: no prompt can be scored
    monkeypatch.setattr(openai_server, "text_completions",
                        lambda body: (200, b'{"choices": [{"index": 0, "text": "x"}]}', {}))
    cfg = OpenAIModelConfiguration(model="fake-lm", api_key=KEY, base_url=fake_openai.base_url)
    async with judge_session(settings()) as session:
        with pytest.raises(RunAbortedError, match="no prompt log-probabilities"):
            await get_judge_client(cfg).completions_logprobs(["a b"])
    assert fake_openai.count == 1 and session.aborted is not None
