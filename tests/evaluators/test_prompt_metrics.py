"""completeness and conciseness on the loopback fake judge: the SDK-style keys, the source and the
response delimited in the prompt, not applicable without a response (or source), tiers, registry."""

from __future__ import annotations

import json

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone.evaluators import registry
from touchstone.evaluators.prompt_metrics import CompletenessEvaluator, ConcisenessEvaluator

SOURCE = "The Trailglow lamp runs 40 hours on low. It charges in two hours. It weighs 180 grams."
SUMMARY = "The Trailglow runs 40 hours and charges in two."


def _rating(score: int) -> object:
    def handler(req: FakeRequest) -> str:
        return json.dumps({"reason": f"rated {score}", "score": score})
    return handler


@pytest.mark.parametrize("score", [1, 3, 5])
def test_completeness_scores_and_keys(fake_openai: FakeOpenAIServer, judge_config: dict[str, str],
                                      score: int) -> None:
    fake_openai.handler = _rating(score)  # type: ignore[assignment]
    ev = CompletenessEvaluator(judge_config)
    out = ev(context=SOURCE, response=SUMMARY, query="Summarise the lamp's specifications.")
    assert out["completeness"] == float(score) and out["gpt_completeness"] == float(score)
    assert out["completeness_result"] == ("pass" if score >= 3 else "fail")
    assert out["completeness_threshold"] == 3 and out["completeness_reason"] == f"rated {score}"
    (request,) = fake_openai.requests
    prompt = "\n".join(str(m["content"]) for m in request.body["messages"])
    assert SOURCE in prompt and SUMMARY in prompt and "COMPLETENESS" in prompt
    assert '<data name="context">' in prompt and '<data name="response">' in prompt


def test_conciseness_judges_the_response_alone(fake_openai: FakeOpenAIServer,
                                               judge_config: dict[str, str]) -> None:
    fake_openai.handler = _rating(2)  # type: ignore[assignment]
    out = ConcisenessEvaluator(judge_config, threshold=4)(response=SUMMARY)
    assert out["conciseness"] == 2.0 and out["conciseness_result"] == "fail"
    assert "CONCISENESS" in str(fake_openai.requests[0].body["messages"][0]["content"])
    assert fake_openai.count == 1


def test_empty_inputs_are_not_applicable_without_a_call(fake_openai: FakeOpenAIServer,
                                                        judge_config: dict[str, str]) -> None:
    assert CompletenessEvaluator(judge_config)(context=SOURCE, response="  ")["completeness_result"] == (
        "not_applicable")
    assert ConcisenessEvaluator(judge_config)(response="")["conciseness_result"] == "not_applicable"
    assert fake_openai.count == 0


def test_registered_with_their_tiers() -> None:
    judge = {"model": "gpt-4o-mini", "base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test"}
    assert registry.create("completeness", model_config=judge).info.tier == "medium"
    assert registry.create("conciseness", model_config=judge).info.tier == "low"
    assert registry.get("completeness").needs_judge and registry.get("conciseness").needs_judge
