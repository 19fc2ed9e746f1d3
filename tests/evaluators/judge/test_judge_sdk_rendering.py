"""Single-turn judge metrics rendered as the compatible SDK renders them: float scores, thresholds as
given, the SDK's per-call keys in ``m_properties``, groundedness without context, retrieval's
``thought_chain``, an agent's messages as query and response, and not-applicable rows."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, Reply

from touchstone.errors import InputValidationError
from touchstone.evaluators.prompt_metrics import CoherenceEvaluator, FluencyEvaluator, SimilarityEvaluator
from touchstone.evaluators.quality import (
    GroundednessEvaluator,
    QAEvaluator,
    RelevanceEvaluator,
    file_search_context,
)
from touchstone.evaluators.retrieval_judge import RetrievalEvaluator
from touchstone.scores import Outcome

Q = "When does the museum open?"
C = "The museum opens at 10 and closes at 18."
R = "It opens at 10."


def blocks(text: str) -> dict[str, str]:
    return {
        m.group(1): m.group(2) for m in re.finditer(r'<data name="(\w+)">\n(.*?)\n</data>', text, re.DOTALL)
    }


def scripted(fake: FakeOpenAIServer, score: int = 4, usage: tuple[int, int] = (120, 30),
             **extra: Any) -> list[FakeRequest]:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> Reply:
        seen.append(req)
        return Reply(content=json.dumps({**extra, "reason": "Because.", "score": score}), usage=usage)

    fake.handler = handler
    return seen


def test_scores_are_floats_and_default_thresholds_ints(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    scripted(fake_openai, score=4)
    calls: list[tuple[Any, dict[str, Any]]] = [
        (GroundednessEvaluator, {"context": C, "response": R}),
        (RelevanceEvaluator, {"query": Q, "response": R}),
        (CoherenceEvaluator, {"query": Q, "response": R}),
        (FluencyEvaluator, {"response": R}),
        (SimilarityEvaluator, {"query": Q, "response": R, "ground_truth": "At ten."}),
        (RetrievalEvaluator, {"query": Q, "context": C}),
    ]
    for cls, inputs in calls:
        ev = cls(judge_config)
        out = ev(**inputs)
        m = ev.metric
        for key in (m, f"{m}_score", f"gpt_{m}"):
            assert type(out[key]) is float and out[key] == 4.0, (m, key)
        assert type(out[f"{m}_threshold"]) is int and out[f"{m}_threshold"] == 3
        assert out[f"{m}_passed"] is True and out[f"{m}_result"] == "pass"
        assert out[f"{m}_status"] == "completed"
        assert ev.threshold == 3.0  # comparisons and the typed Score use the float


@pytest.mark.parametrize(("threshold", "result"), [(5, "fail"), (3.5, "pass"), (4.0, "pass")])
def test_threshold_is_reported_as_given(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], threshold: float, result: str
) -> None:
    scripted(fake_openai, score=4)
    out = GroundednessEvaluator(judge_config, threshold=threshold)(context=C, response=R)
    assert out["groundedness_threshold"] == threshold
    assert type(out["groundedness_threshold"]) is type(threshold)
    assert out["groundedness_result"] == result


def test_typed_score_keeps_the_value_and_float_threshold(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    scripted(fake_openai, score=2)
    ev = CoherenceEvaluator(judge_config)
    outcome = asyncio.run(ev.ascore({"query": Q, "response": R}))
    assert isinstance(outcome, Outcome)
    main = outcome.main
    assert main is not None and main.value == 2 and main.passed is False and main.threshold == 3.0


def test_properties_carry_the_sdk_call_keys(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = scripted(fake_openai, score=4, usage=(120, 30))
    props = RelevanceEvaluator(judge_config)(query=Q, response=R)["relevance_properties"]
    assert props["prompt_tokens"] == 120 and props["completion_tokens"] == 30 and props["total_tokens"] == 150
    assert props["finish_reason"] == "stop" and props["model"] == "fake-judge"
    sent = json.loads(props["sample_input"])
    assert sent == seen[0].messages
    assert json.loads(props["sample_output"]) == [
        {"role": "assistant", "content": json.dumps({"reason": "Because.", "score": 4})}
    ]
    # touchstone's provenance stays beside them
    assert props["prompt"] == "relevance" and props["judge_model"] == "fake-judge"
    assert "sk-test" not in json.dumps(props)


def test_repaired_judgement_counts_both_calls(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    replies = iter([Reply(content="Score: 9", usage=(100, 5)),
                    Reply(content=json.dumps({"reason": "Fixed.", "score": 3}), usage=(140, 10))])
    fake_openai.handler = lambda req: next(replies)
    props = FluencyEvaluator(judge_config)(response=R)["fluency_properties"]
    assert props["repaired"] is True
    assert (props["prompt_tokens"], props["completion_tokens"], props["total_tokens"]) == (240, 15, 255)
    assert json.loads(props["sample_input"])[-2] == {"role": "assistant", "content": "Score: 9"}


def test_groundedness_without_context_judges_the_response_against_itself(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = scripted(fake_openai, score=2)
    out = GroundednessEvaluator(judge_config)(query=Q, response=R)
    assert blocks(seen[0].prompt) == {"query": Q, "context": R, "response": R}
    assert out["groundedness"] == 2.0 and out["groundedness_result"] == "fail"
    assert out["groundedness_properties"]["context_from"] == "response"
    with pytest.raises(InputValidationError):
        GroundednessEvaluator(judge_config)(response=R)  # neither context nor query


def test_retrieval_reports_thought_chain(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    seen = scripted(fake_openai, score=3, thought_chain="Let's see: one document answers it.")
    out = RetrievalEvaluator(judge_config)(query=Q, context=C)
    assert "thought_chain" in seen[0].json_schema["properties"]  # type: ignore[index]
    assert out["retrieval_properties"]["thought_chain"] == "Let's see: one document answers it."
    assert out["retrieval"] == 3.0


QUERY = [
    {"role": "system", "content": "You are a museum guide."},
    {"role": "user", "content": [{"type": "text", "text": Q}]},
]
FILE_SEARCH = [
    {"role": "assistant", "content": [{"type": "tool_call", "tool_call_id": "fs1", "name": "file_search",
                                       "arguments": {"queries": ["hours"]}}]},
    {"role": "tool", "tool_call_id": "fs1", "content": [{"type": "tool_result", "tool_result": [
        {"file_name": "hours.md", "content": [{"type": "text", "text": C}]}]}]},
    {"role": "assistant", "content": [{"type": "text", "text": R}]},
]
UNFINISHED = [{"role": "assistant", "content": [
    {"type": "function_call", "tool_call_id": "c1", "name": "lookup", "arguments": {"q": "hours"}}]}]


def test_agent_messages_are_rendered_for_the_judge(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = scripted(fake_openai, score=5)
    out = RelevanceEvaluator(judge_config)(query=QUERY, response=FILE_SEARCH)
    shown = blocks(seen[0].prompt)
    assert "[system] You are a museum guide." in shown["query"] and Q in shown["query"]
    assert "[tool call fs1] file_search" in shown["response"] and f"[assistant] {R}" in shown["response"]
    assert out["relevance"] == 5.0


def test_groundedness_of_an_agent_rests_on_file_search_results(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = scripted(fake_openai, score=5)
    out = GroundednessEvaluator(judge_config)(query=Q, response=FILE_SEARCH)
    assert blocks(seen[0].prompt)["context"] == f"hours.md:\n- {C}"
    assert out["groundedness_properties"]["context_from"] == "file_search"
    assert file_search_context([{"role": "assistant", "content": "no tools"}]) is None


def test_not_applicable_rows(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    seen = scripted(fake_openai)
    one = [{"role": "assistant", "content": [{"type": "text", "text": R}]}]
    rows: list[tuple[Any, dict[str, Any]]] = [
        (FluencyEvaluator(judge_config), {"response": UNFINISHED}),
        (RelevanceEvaluator(judge_config), {"query": Q, "response": UNFINISHED}),
        (GroundednessEvaluator(judge_config), {"query": Q, "response": one}),  # nothing to judge against
    ]
    for ev, inputs in rows:
        m = ev.metric
        out = ev(**inputs)
        assert out[m] is None and out[f"{m}_score"] is None and out[f"{m}_passed"] is None
        assert out[f"{m}_result"] == "not_applicable" and out[f"{m}_status"] == "skipped"
        assert out[f"{m}_reason"].startswith("Not applicable: ") and out[f"{m}_threshold"] == 3
        outcome = asyncio.run(ev.ascore(ev.check_call_inputs(inputs)))
        assert not outcome.failed and outcome.main is not None and outcome.main.label == "not_applicable"
    assert seen == []  # no judge call for any of them


def test_malformed_agent_messages_are_input_errors(judge_config: dict[str, str]) -> None:
    bad = [{"role": "assistant", "content": [{"type": "tool_call", "name": "lookup", "arguments": {}}]}]
    with pytest.raises(InputValidationError, match="tool_call_id"):
        CoherenceEvaluator(judge_config)(query=Q, response=bad)
    with pytest.raises(InputValidationError):
        FluencyEvaluator(judge_config)(response=[{"content": "no role"}])


def test_qa_parts_render_as_the_sdk(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    scripted(fake_openai, score=4)
    out = QAEvaluator(judge_config, groundedness_threshold=5)(
        query=Q, response=R, context=C, ground_truth="At 10."
    )
    for m in ("groundedness", "relevance", "coherence", "fluency", "similarity"):
        assert type(out[m]) is float and type(out[f"{m}_threshold"]) is int
        assert out[f"{m}_properties"]["total_tokens"] == 150
    assert out["groundedness_threshold"] == 5 and out["groundedness_result"] == "fail"
