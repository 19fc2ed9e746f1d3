"""The one judge primitive (``ask``): a reply validated against a pydantic model over real HTTP to
the loopback fake, one repair request when it is unusable, then a typed failure; provenance kept."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply

from touchstone.evaluators.judge import JudgeReplyError, ask, model_reader
from touchstone.evaluators.judge.prompts import load_prompt
from touchstone.judges import JudgeSettings, get_judge_client


class Verdict(BaseModel):
    claim: str
    supported: bool


class Verdicts(BaseModel):
    verdicts: list[Verdict]


def _client(server: FakeOpenAIServer) -> Any:
    return get_judge_client(
        {"type": "openai", "model": "judge", "base_url": server.base_url, "api_key": "sk-test-primitive"},
        settings=JudgeSettings(cache=False, max_retries=0),
    )


def _ask(server: FakeOpenAIServer) -> Any:
    schema = Verdicts.model_json_schema()
    data = {"query": "q", "response": "The lantern runs 40 hours.", "context": "It runs 40 hours."}
    return asyncio.run(ask(_client(server), load_prompt("groundedness"), data, model_reader(Verdicts),
                           schema=schema, what="verdicts"))


def test_a_valid_reply_is_read_into_the_model(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = lambda r: json.dumps({"verdicts": [{"claim": "40 hours", "supported": True}]})
    answer = _ask(fake_openai)
    assert isinstance(answer.value, Verdicts)
    assert answer.value.verdicts == [Verdict(claim="40 hours", supported=True)]
    assert not answer.repaired and answer.properties["prompt"] == "groundedness"
    assert fake_openai.count == 1


def test_one_repair_request_names_the_problem(fake_openai: FakeOpenAIServer) -> None:
    seen: list[str] = []

    def handler(request: FakeRequest) -> Reply:
        seen.append(request.prompt)
        if len(seen) == 1:
            return Reply(content=json.dumps({"verdicts": [{"claim": "x"}]}))  # "supported" missing
        return Reply(content=json.dumps({"verdicts": [{"claim": "x", "supported": False}]}))

    fake_openai.handler = handler
    answer = _ask(fake_openai)
    assert answer.repaired and "supported" in (answer.repair_cause or "")
    assert answer.value.verdicts[0].supported is False
    assert "supported" in seen[1]  # the repair request says what was wrong
    assert fake_openai.count == 2


def test_a_reply_that_stays_unusable_fails_with_the_cause(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = lambda r: "I cannot answer in JSON."
    with pytest.raises(JudgeReplyError) as info:
        _ask(fake_openai)
    assert "no usable verdicts" in str(info.value) and "after one repair request" in str(info.value)
    assert info.value.reply == "I cannot answer in JSON."
    assert fake_openai.count == 2
