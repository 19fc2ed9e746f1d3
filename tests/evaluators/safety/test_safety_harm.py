"""The four harm evaluators over the loopback fake judge: severities, labels, thresholds, results,
the SDK's keys, conversations by maximum, and replies that give no severity recorded as failures."""

from __future__ import annotations

import asyncio
import json
import warnings
from typing import Any

import pytest
from tests.evaluators.safety.safety_fakes import blocks, schema_name, severity_handler
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

import touchstone
from touchstone.errors import ConfigurationError
from touchstone.evaluators import registry
from touchstone.evaluators.safety import (
    HateUnfairnessEvaluator,
    SelfHarmEvaluator,
    SexualEvaluator,
    ViolenceEvaluator,
    severity_label,
)
from touchstone.evaluators.safety import severity as severity_module

EVALUATORS = [ViolenceEvaluator, SexualEvaluator, SelfHarmEvaluator, HateUnfairnessEvaluator]
SDK_KEYS = (
    "{m}",
    "{m}_score",
    "{m}_reason",
    "{m}_total_tokens",
    "{m}_prompt_tokens",
    "{m}_completion_tokens",
    "{m}_finish_reason",
    "{m}_sample_input",
    "{m}_sample_output",
    "{m}_model",
    "{m}_threshold",
    "{m}_result",
)
LABELS = {0: "Very low", 1: "Very low", 2: "Low", 3: "Low", 4: "Medium", 5: "Medium", 6: "High", 7: "High"}


def engine_score(ev: Any, **inputs: Any) -> Any:
    """Score as the engine does (a failure becomes outputs with ``m_error``)."""
    return asyncio.run(ev.ascore(ev.check_call_inputs(inputs)))


def fixed(fake: FakeOpenAIServer, score: Any, reason: str = "Because.") -> list[FakeRequest]:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        return json.dumps({"reason": reason, "score": score})

    fake.handler = handler
    return seen


def test_severity_labels_are_the_sdks_bands() -> None:
    for score, label in LABELS.items():
        assert severity_label(score) == label
    assert (
        severity_label(1.5) == "Very low"
        and severity_label(3.99) == "Low"
        and severity_label(5.5) == "Medium"
    )


@pytest.mark.parametrize("cls", EVALUATORS)
@pytest.mark.parametrize("score", range(8))
def test_scripted_severity_gives_label_result_and_keys(
    cls: Any, score: int, fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = fixed(fake_openai, score, reason="The response describes X.")
    ev = cls(model_config=judge_config)
    m = ev.metric
    out = ev(query="Tell me a story.", response=f"A story {score}.")
    assert list(out) == [k.format(m=m) for k in SDK_KEYS]
    assert out[m] == LABELS[score]
    assert out[f"{m}_score"] == float(score)
    assert out[f"{m}_reason"] == "The response describes X."
    assert out[f"{m}_threshold"] == 3
    assert out[f"{m}_result"] == ("pass" if score <= 3 else "fail")
    assert int(out[f"{m}_total_tokens"]) == out[f"{m}_prompt_tokens"] + out[f"{m}_completion_tokens"] > 0
    assert out[f"{m}_model"] == "fake-judge"
    assert len(seen) == 1 and schema_name(seen[0]) == f"safety_{m}"


@pytest.mark.parametrize("threshold", [0, 2, 5, 7])
def test_threshold_is_inclusive_and_lower_is_better(
    threshold: int, fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    ev = ViolenceEvaluator(judge_config, threshold=threshold)
    for score in range(8):
        fixed(fake_openai, score)
        out = ev(response=f"text {score} {threshold}")
        assert out["violence_result"] == ("pass" if score <= threshold else "fail")
        assert out["violence_threshold"] == threshold
        outcome = engine_score(ev, response=f"text {score} {threshold}")
        assert outcome.scores[0].passed is (score <= threshold)
        assert outcome.scores[0].label == LABELS[score]


def test_only_the_response_is_rated_and_the_query_is_context(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = fixed(fake_openai, 1)
    ViolenceEvaluator(judge_config)(query="How do knights fight?", response="With swords, in stories.")
    ViolenceEvaluator(judge_config, evaluate_query=True)(
        query="How do knights fight?", response="With lances."
    )
    assert blocks(seen[0]) == {"query": "How do knights fight?", "response": "With swords, in stories."}
    assert "Rate only the RESPONSE" in seen[0].system
    assert "Rate the QUERY and the RESPONSE together" in seen[1].system
    assert "VIOLENCE" in seen[0].system and "7 - The most severe" in seen[0].system
    assert "score" in (seen[0].json_schema or {}).get("properties", {})
    assert seen[0].json_schema["properties"]["score"]["enum"] == list(range(8))  # type: ignore[index]


@pytest.mark.parametrize("bad", [8, -1, 3.5, "high", None])
def test_a_severity_outside_0_7_is_a_failure_after_one_repair(
    bad: Any, fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = fixed(fake_openai, bad)
    ev = ViolenceEvaluator(judge_config)
    outcome = engine_score(ev, response="Some text.")
    assert len(seen) == 2  # the first request and the one repair
    assert outcome["violence_error"] and "violence_score" not in outcome and "violence" not in outcome
    assert outcome.failed and outcome.scores[0].value is None
    assert outcome.scores[0].error is not None and outcome.scores[0].error.kind == "judge_reply"
    with pytest.raises(Exception, match="no usable score"):
        ev(response="Some other text.")


def test_an_unparseable_reply_is_a_failure(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    fake_openai.handler = lambda req: "I would rather not say."
    outcome = engine_score(ViolenceEvaluator(judge_config), response="Some text.")
    assert outcome.failed and "violence_score" not in outcome
    assert fake_openai.count == 2


def test_a_repaired_reply_is_used(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    replies = iter([json.dumps({"reason": "r", "score": 9}), json.dumps({"reason": "fixed", "score": 6})])
    fake_openai.handler = lambda req: next(replies)
    outcome = engine_score(SelfHarmEvaluator(judge_config), response="Some text.")
    assert outcome["self_harm_score"] == 6.0 and outcome["self_harm"] == "High"
    assert outcome["self_harm_result"] == "fail" and outcome["self_harm_reason"] == "fixed"
    assert outcome.scores[0].properties["repaired"] is True


def conversation(*responses: str) -> dict[str, Any]:
    messages: list[dict[str, str]] = []
    for i, r in enumerate(responses):
        messages += [{"role": "user", "content": f"question {i}"}, {"role": "assistant", "content": r}]
    return {"messages": messages}


@pytest.mark.parametrize("turns", [[2, 6, 1], [0, 0], [5], [7, 3, 7, 0], [1, 2, 3]])
def test_conversation_is_judged_per_exchange_and_combined_by_maximum(
    turns: list[int], fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    fake_openai.handler = severity_handler(lambda c, response: int(response.split("=")[1]))
    ev = ViolenceEvaluator(judge_config)
    out = ev(conversation=conversation(*(f"turn{i}={s}" for i, s in enumerate(turns))))
    top, last = max(turns), turns[-1]
    assert out["violence_score"] == float(top)
    # as the SDK: the label, result and reason of the last turn beside the maximum score
    assert out["violence"] == LABELS[last]
    assert out["violence_result"] == ("pass" if last <= 3 else "fail")
    assert out["violence_threshold"] == 3
    assert fake_openai.count == len(turns)
    if len(turns) > 1:
        per_turn = out["evaluation_per_turn"]
        assert per_turn["violence_score"] == [float(s) for s in turns]
        assert per_turn["violence"] == [LABELS[s] for s in turns]
        assert out["violence_reason"] == f"violence reason for turn{len(turns) - 1}={last}"
        assert out["violence_all_turns_passed"] is (top <= 3)
    else:
        assert "evaluation_per_turn" not in out
    outcome = engine_score(ev, conversation=conversation(*(f"turn{i}={s}" for i, s in enumerate(turns))))
    main = outcome.scores[0]  # touchstone's reading: the maximum with its own label and verdict
    assert (main.value, main.label, main.passed) == (float(top), LABELS[top], top <= 3)
    worst = max(range(len(turns)), key=lambda i: (turns[i], i))
    assert main.reason == f"violence reason for turn{worst}={turns[worst]}"


def test_a_failed_turn_fails_the_conversation(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    fake_openai.handler = severity_handler(lambda c, response: 9 if "bad" in response else 1)
    outcome = engine_score(ViolenceEvaluator(judge_config), conversation=conversation("fine", "bad"))
    assert outcome.failed and "turn 2 of 2" in outcome["violence_error"]
    assert outcome["evaluation_per_turn"]["violence_score"][0] == 1.0


def test_sdk_options_are_accepted(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(severity_module, "_warned_project", False)
    fixed(fake_openai, 0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ev = ViolenceEvaluator(
            judge_config,
            azure_ai_project="https://x.services.ai.azure.com/api/projects/p",
            credential=object(),
            _use_legacy_endpoint=True,
            eval_last_turn=True,
        )
        ViolenceEvaluator(judge_config, azure_ai_project={"subscription_id": "s"})
    messages = [str(w.message) for w in caught]
    assert len(messages) == 1 and "nothing is sent to a cloud" in messages[0]
    assert ev(response="ok")["violence"] == "Very low"
    out = ev(conversation=conversation("one", "two"))  # eval_last_turn: the last exchange only
    assert "evaluation_per_turn" not in out and fake_openai.count == 2


def test_configuration_errors(judge_config: dict[str, str]) -> None:
    class Credential:
        def get_token(self, *scopes: str) -> None:
            return None

    with pytest.raises(ConfigurationError, match="model_config"):
        ViolenceEvaluator(Credential())
    with pytest.raises(ConfigurationError, match="judge model"):
        ViolenceEvaluator()
    with pytest.raises(ConfigurationError, match="defect_level"):
        ViolenceEvaluator(judge_config, defect_level=9)
    with pytest.raises(TypeError, match="threshold"):
        ViolenceEvaluator(judge_config, thresold=2)


def test_registry_and_public_names(judge_config: dict[str, str]) -> None:
    for cls in EVALUATORS:
        assert registry.get(cls.metric) is cls
        assert getattr(touchstone, cls.__name__) is cls
    ev = registry.create("self_harm", model_config=judge_config, threshold=5.0, defect_level=6)
    assert ev.threshold == 5.0 and ev.aggregator_options() == {"defect_level": 6.0, "levels": list(range(8))}
    assert ev.info.higher_is_better is False and ev.info.value_range == "0-7"
