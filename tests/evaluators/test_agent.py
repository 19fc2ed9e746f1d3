"""The agent evaluators over the loopback fake OpenAI server: the compatible SDK's inputs (strings,
agent messages with tool calls and results, tool definitions), its output keys and value types,
not-applicable rows, thresholds, conversation aggregation, repair, and input errors."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone import (
    InputValidationError,
    IntentResolutionEvaluator,
    ResponseCompletenessEvaluator,
    TaskAdherenceEvaluator,
    ToolCallAccuracyEvaluator,
    evaluate,
)
from touchstone.evaluators import registry
from touchstone.evaluators.agent import AgentInputError, AgentJudgeEvaluator
from touchstone.evaluators.judge import JudgeReplyError
from touchstone.evaluators.judge.prompts import load_prompt
from touchstone.scores import Status

QUERY: list[dict[str, Any]] = [
    {"role": "system", "content": "You are the shop's order assistant."},
    {"role": "user", "content": [{"type": "text", "text": "Where is order 123?"}]},
]
RESPONSE: list[dict[str, Any]] = [
    {"role": "assistant", "content": [{"type": "text", "text": "Let me look it up."}]},
    {
        "role": "assistant",
        "content": [
            {
                "type": "tool_call",
                "tool_call_id": "call_1",
                "name": "get_order",
                "arguments": {"order_id": "123"},
            }
        ],
    },
    {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": [{"type": "tool_result", "tool_result": {"status": "shipped"}}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Order 123 has shipped."}]},
]
TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_order",
        "description": "Look up an order by its id.",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
    }
]
SDK_TOKEN_KEYS = (
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "finish_reason",
    "model",
    "sample_input",
    "sample_output",
)


def blocks(text: str) -> dict[str, str]:
    """The delimited data blocks of a prompt, by name."""
    return {
        m.group(1): m.group(2) for m in re.finditer(r'<data name="(\w+)">\n(.*?)\n</data>', text, re.DOTALL)
    }


def scripted(fake: FakeOpenAIServer, reply: dict[str, Any] | str) -> list[FakeRequest]:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        return reply if isinstance(reply, str) else json.dumps(reply)

    fake.handler = handler
    return seen


def engine_score(ev: AgentJudgeEvaluator, **inputs: Any) -> dict[str, Any]:
    """Score as the engine does (failures become ``m_error``; a direct call raises)."""
    return dict(asyncio.run(ev.ascore(inputs)))


def sdk_keys(m: str, *, gpt: bool = False) -> list[str]:
    head = [m, f"gpt_{m}"] if gpt else [m]
    middle = [f"{m}_result", f"{m}_passed"] if gpt else [f"{m}_passed", f"{m}_result"]
    return [*head, f"{m}_score", *middle, f"{m}_reason", f"{m}_status", f"{m}_threshold", f"{m}_properties"]


STRING_CASES: list[tuple[type[AgentJudgeEvaluator], dict[str, Any], int, dict[str, str]]] = [
    (
        ResponseCompletenessEvaluator,
        {"response": "Paris.", "ground_truth": "Paris is the capital of France."},
        4,
        {"ground_truth": "Paris is the capital of France.", "response": "Paris."},
    ),
    (
        IntentResolutionEvaluator,
        {"query": "Capital of France?", "response": "Paris."},
        4,
        {"query": "Capital of France?", "response": "Paris."},
    ),
    (
        TaskAdherenceEvaluator,
        {"query": "Capital of France?", "response": "Paris."},
        1,
        {"query": "Capital of France?", "response": "Paris."},
    ),
    (
        ToolCallAccuracyEvaluator,
        {"query": "Where is order 123?", "response": "I called get_order.", "tool_definitions": TOOLS},
        4,
        {
            "query": "Where is order 123?",
            "tool_definitions": json.dumps(TOOLS[0]),
            "tool_calls": "I called get_order.",
        },
    ),
]


@pytest.mark.parametrize(("cls", "inputs", "score", "expected_blocks"), STRING_CASES)
def test_string_inputs_give_the_sdk_keys_and_types(
    fake_openai: FakeOpenAIServer,
    judge_config: dict[str, str],
    cls: type[AgentJudgeEvaluator],
    inputs: dict[str, Any],
    score: int,
    expected_blocks: dict[str, str],
) -> None:
    seen = scripted(fake_openai, {"reason": "Because.", "score": score, "status": "completed"})
    ev = cls(judge_config)
    out = ev(**inputs)
    m = ev.metric
    assert list(out) == sdk_keys(m, gpt=cls is ToolCallAccuracyEvaluator)
    assert out[m] == float(score) and type(out[m]) is float and out[f"{m}_score"] == out[m]
    assert out[f"{m}_passed"] is True and out[f"{m}_result"] == "pass"
    assert out[f"{m}_reason"] == "Because." and out[f"{m}_status"] == "completed"
    assert out[f"{m}_threshold"] == 3 and type(out[f"{m}_threshold"]) is int
    props = out[f"{m}_properties"]
    for key in SDK_TOKEN_KEYS:
        assert key in props
    assert props["total_tokens"] == props["prompt_tokens"] + props["completion_tokens"] > 0
    assert props["model"] == "fake-judge" and props["finish_reason"] == "stop"
    assert json.loads(props["sample_output"])[0]["content"] == json.dumps(
        {"reason": "Because.", "score": score, "status": "completed"}
    )
    prompt = load_prompt(m)
    assert props["prompt"] == m and props["prompt_hash"] == prompt.hash and props["repaired"] is False
    assert len(seen) == 1 and blocks(seen[0].prompt) == expected_blocks
    assert "data, never" in seen[0].prompt
    schema = seen[0].json_schema
    assert schema is not None and next(iter(schema["properties"])) == "reason"
    assert list(schema["properties"])[-2:] == ["status", "score"]


def test_messages_with_tool_calls_reach_the_prompt(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = scripted(fake_openai, {"reason": "Resolved.", "score": 5})
    out = IntentResolutionEvaluator(judge_config)(query=QUERY, response=RESPONSE, tool_definitions=TOOLS)
    assert out["intent_resolution"] == 5.0 and out["intent_resolution_result"] == "pass"
    data = blocks(seen[0].prompt)
    assert data["query"] == "[system] You are the shop's order assistant.\n[user] Where is order 123?"
    assert data["response"] == (
        "[assistant] Let me look it up.\n"
        '[tool call call_1] get_order({"order_id": "123"})\n'
        '[tool result for call call_1] {"status": "shipped"}\n'
        "[assistant] Order 123 has shipped."
    )
    assert json.loads(data["tool_definitions"]) == TOOLS[0]


def test_task_adherence_sees_the_system_message_apart(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = scripted(fake_openai, {"reason": "Done as asked.", "score": 1, "status": "completed"})
    out = TaskAdherenceEvaluator(judge_config)(query=QUERY, response=RESPONSE)
    data = blocks(seen[0].prompt)
    assert data["system_message"] == "You are the shop's order assistant."
    assert data["query"] == "[user] Where is order 123?"
    assert "[tool call call_1] get_order" in data["response"] and "tool_definitions" not in data
    assert out["task_adherence"] == 1.0 and out["task_adherence_passed"] is True


def test_tool_call_accuracy_judges_the_calls_in_the_response_with_their_results(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    details = {
        "tool_calls_made_by_agent": 1,
        "correct_tool_calls_made_by_agent": 1,
        "per_tool_call_details": [],
        "excess_tool_calls": {"total": 0, "details": []},
        "missing_tool_calls": {"total": 0, "details": []},
    }
    seen = scripted(
        fake_openai, {"reason": "Right call.", "properties": details, "score": 5, "status": "completed"}
    )
    other_call = {
        "type": "tool_call",
        "tool_call_id": "x",
        "name": "get_order",
        "arguments": {"order_id": "9"},
    }
    out = ToolCallAccuracyEvaluator(judge_config)(
        query=QUERY, response=RESPONSE, tool_calls=[other_call], tool_definitions=TOOLS
    )
    assert out["tool_call_accuracy"] == out["gpt_tool_call_accuracy"] == 5.0
    props = out["tool_call_accuracy_properties"]
    assert props["tool_calls_made_by_agent"] == 1 and props["missing_tool_calls"] == {
        "total": 0,
        "details": [],
    }
    data = blocks(seen[0].prompt)
    # as the SDK: the calls found in the response are judged rather than those passed beside it
    assert (
        data["tool_calls"]
        == '[tool call call_1] get_order({"order_id": "123"})\n  result: {"status": "shipped"}'
    )
    assert "properties" in (seen[0].json_schema or {}).get("properties", {})


def test_tool_calls_given_alone_and_hosted_tools(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = scripted(fake_openai, {"reason": "Fine.", "score": 4})
    ev = ToolCallAccuracyEvaluator(judge_config)
    call = RESPONSE[1]["content"][0]
    out = ev(query="Where is order 123?", tool_calls=[call], tool_definitions=TOOLS)
    assert out["tool_call_accuracy"] == 4.0
    assert blocks(seen[0].prompt)["tool_calls"] == '[tool call call_1] get_order({"order_id": "123"})'
    hosted = [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "tool_call",
                    "tool_call_id": "b1",
                    "name": "bing_grounding",
                    "arguments": {"requesturl": "q"},
                }
            ],
        }
    ]
    out = ev(query="News?", response=hosted, tool_definitions=TOOLS)
    assert out["tool_call_accuracy"] == 4.0
    assert '"name": "bing_grounding"' in blocks(seen[1].prompt)["tool_definitions"]


def _not_applicable(out: dict[str, Any], m: str, reason: str, threshold: int = 3) -> None:
    assert out == {
        m: None,
        f"{m}_score": None,
        f"{m}_passed": None,
        f"{m}_result": "not_applicable",
        f"{m}_reason": f"Not applicable: {reason}",
        f"{m}_status": "skipped",
        f"{m}_threshold": threshold,
        f"{m}_properties": None,
    }


@pytest.mark.parametrize(
    ("inputs", "reason"),
    [
        (
            {"query": QUERY, "response": [RESPONSE[0]], "tool_definitions": TOOLS},
            "No tool calls found in response or provided tool_calls.",
        ),
        (
            {"query": QUERY, "response": RESPONSE, "tool_definitions": [{"name": "other", "parameters": {}}]},
            "Tool definitions for all tool calls must be provided.",
        ),
    ],
)
def test_tool_call_accuracy_not_applicable_without_calls_or_definitions(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], inputs: dict[str, Any], reason: str
) -> None:
    ev = ToolCallAccuracyEvaluator(judge_config)
    _not_applicable(ev(**inputs), "tool_call_accuracy", reason)
    outcome = asyncio.run(ev.ascore(inputs))
    assert outcome.main is not None and outcome.main.status is Status.OK and outcome.main.value is None
    assert outcome.main.label == "not_applicable" and not outcome.failed
    assert fake_openai.count == 0


def test_an_unfinished_agent_is_not_applicable(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    pending = [
        *RESPONSE[:1],
        {
            "role": "assistant",
            "content": [
                {
                    "type": "function_call",
                    "tool_call_id": "c2",
                    "name": "get_order",
                    "arguments": {"order_id": "7"},
                }
            ],
        },
    ]
    reason = "Intermediate response. Please provide the agent's final response for evaluation."
    _not_applicable(
        IntentResolutionEvaluator(judge_config)(query=QUERY, response=pending), "intent_resolution", reason
    )
    _not_applicable(
        TaskAdherenceEvaluator(judge_config)(query=QUERY, response=pending), "task_adherence", reason
    )
    _not_applicable(
        ResponseCompletenessEvaluator(judge_config)(response=pending, ground_truth="Shipped."),
        "response_completeness",
        reason,
    )
    assert fake_openai.count == 0


def test_a_judge_that_skips_gives_not_applicable(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    scripted(fake_openai, {"reason": "The ground truth is empty.", "score": None, "status": "skipped"})
    out = ResponseCompletenessEvaluator(judge_config)(response="Paris.", ground_truth="-")
    _not_applicable(out, "response_completeness", "The ground truth is empty.")


@pytest.mark.parametrize(("threshold", "passed"), [(4, True), (5, False)])
def test_threshold_decides_and_is_reported_as_given(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], threshold: int, passed: bool
) -> None:
    scripted(fake_openai, {"reason": "Mostly.", "score": 4})
    out = IntentResolutionEvaluator(judge_config, threshold=threshold)(query="Q?", response="A.")
    assert out["intent_resolution_passed"] is passed
    assert out["intent_resolution_result"] == ("pass" if passed else "fail")
    assert out["intent_resolution_threshold"] == threshold


@pytest.mark.parametrize(("score", "passed"), [(1, True), (0, False)])
def test_task_adherence_passes_on_one_whatever_the_threshold(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], score: int, passed: bool
) -> None:
    scripted(fake_openai, {"reason": "r", "score": score})
    out = TaskAdherenceEvaluator(judge_config, threshold=4)(query="Q?", response="A.")
    assert out["task_adherence"] == float(score) and out["task_adherence_passed"] is passed
    assert out["task_adherence_threshold"] == 3  # what the SDK reports, whatever was given


def test_conversation_turns_are_combined_as_the_sdk_does(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    def handler(req: FakeRequest) -> str:
        first = "Paris." in blocks(req.prompt).get("response", "")
        return json.dumps({"reason": "first" if first else "second", "score": 2 if first else 5})

    fake_openai.handler = handler
    conversation = {
        "messages": [
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris.", "ground_truth": "Paris is the capital of France."},
            {"role": "user", "content": "And of Spain?"},
            {"role": "assistant", "content": "Madrid.", "ground_truth": "Madrid."},
        ]
    }
    m = "response_completeness"
    out = ResponseCompletenessEvaluator(judge_config)(conversation=conversation)
    assert out[m] == out[f"{m}_score"] == 3.5
    assert out[f"{m}_passed"] == 0.5 and type(out[f"{m}_passed"]) is float
    assert out[f"{m}_threshold"] == 3.0 and type(out[f"{m}_threshold"]) is float
    assert out[f"{m}_result"] == "pass" and out[f"{m}_reason"] == "second"  # the last turn's
    per_turn = out["evaluation_per_turn"]
    assert per_turn[m] == [2.0, 5.0] and per_turn[f"{m}_passed"] == [False, True]
    assert per_turn[f"{m}_threshold"] == [3, 3] and len(per_turn[f"{m}_properties"]) == 2
    assert fake_openai.count == 2
    # the SDK's bare message list, with one ground truth for every reply
    out = ResponseCompletenessEvaluator(judge_config)(
        messages=conversation["messages"][:2], ground_truth="Paris."
    )
    assert out[m] == 2.0 and "evaluation_per_turn" not in out


def test_repair_then_error(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    replies = iter(['{"reason": "x", "score": 9}', '{"reason": "x", "score": "high"}'])
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        return next(replies)

    fake_openai.handler = handler
    out = engine_score(IntentResolutionEvaluator(judge_config), query="Q?", response="A.")
    assert "intent_resolution" not in out
    assert "after one repair request" in out["intent_resolution_error"]
    assert "not a number" in out["intent_resolution_error"]
    assert out["intent_resolution_status"] == "failed" and out["intent_resolution_threshold"] == 3
    assert len(seen) == 2 and '"score" 9 is not a number from 1 to 5' in seen[1].messages[-1]["content"]


def test_one_repair_then_score(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    replies = iter(["I would say four.", '{"reason": "Fixed.", "score": 4}'])
    fake_openai.handler = lambda req: next(replies)
    out = ToolCallAccuracyEvaluator(judge_config)(
        query="Q?", tool_calls=[RESPONSE[1]["content"][0]], tool_definitions=TOOLS
    )
    assert out["tool_call_accuracy"] == 4.0
    props = out["tool_call_accuracy_properties"]
    assert props["repaired"] is True and "no JSON object" in props["repair_cause"]


def test_direct_call_raises_on_unusable_reply(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    fake_openai.handler = lambda req: '{"reason": "no number here"}'
    with pytest.raises(JudgeReplyError, match='no "score"'):
        TaskAdherenceEvaluator(judge_config)(query="Q?", response="A.")


INPUT_ERRORS: list[tuple[type[AgentJudgeEvaluator], dict[str, Any], str]] = [
    (IntentResolutionEvaluator, {"query": "Q?", "response": ""}, "Response string cannot be empty."),
    (
        IntentResolutionEvaluator,
        {"query": "Q?", "response": [{"role": "assistant"}]},
        "Each message must contain a 'content' field.",
    ),
    (
        IntentResolutionEvaluator,
        {"query": "Q?", "response": "A.", "tool_definitions": [{"name": "f"}]},
        "Each tool definitions must contain a 'parameters' field.",
    ),
    (
        IntentResolutionEvaluator,
        {"query": "Q?", "response": "A.", "tool_definitions": TOOLS[0]},
        "Tool definitions must be provided as a list of dictionaries.",
    ),
    (
        IntentResolutionEvaluator,
        {"query": [{"role": "user", "content": [{"type": "image", "url": "u"}]}], "response": "A."},
        "Invalid content type 'image' for message with role 'user'. Must be 'text' or 'input_text'.",
    ),
    (
        TaskAdherenceEvaluator,
        {"query": "Q?", "response": 5},
        "Response must be a string or a list of messages.",
    ),
    (TaskAdherenceEvaluator, {"response": "A."}, "Query is a required input and cannot be None."),
    (
        ToolCallAccuracyEvaluator,
        {"query": "Q?", "tool_calls": [RESPONSE[1]["content"][0]]},
        "Tool definitions input is required but not provided.",
    ),
    (
        ToolCallAccuracyEvaluator,
        {"query": "Q?", "tool_definitions": TOOLS},
        "No tool calls found in response or provided tool_calls.",
    ),
    (
        ToolCallAccuracyEvaluator,
        {"query": "Q?", "tool_calls": RESPONSE[1]["content"][0], "tool_definitions": TOOLS},
        "Tool calls must be provided as a list of dictionaries.",
    ),
    (
        ToolCallAccuracyEvaluator,
        {
            "query": "Q?",
            "tool_definitions": TOOLS,
            "tool_calls": [{"type": "tool_call", "name": "get_order", "arguments": {}}],
        },
        "Each tool_call content items must contain a 'tool_call_id' field.",
    ),
    (
        ResponseCompletenessEvaluator,
        {"response": "A."},
        "ResponseCompletenessEvaluator: Either 'conversation' or individual inputs must be provided.",
    ),
    (
        ResponseCompletenessEvaluator,
        {"conversation": {"turns": []}},
        "Each Conversation must contain a 'messages' field.",
    ),
]


@pytest.mark.parametrize(("cls", "inputs", "message"), INPUT_ERRORS)
def test_inputs_are_checked_as_the_sdk_checks_them(
    fake_openai: FakeOpenAIServer,
    judge_config: dict[str, str],
    cls: type[AgentJudgeEvaluator],
    inputs: dict[str, Any],
    message: str,
) -> None:
    ev = cls(judge_config)
    with pytest.raises(AgentInputError) as info:
        ev(**inputs)
    assert info.value.reason == message and isinstance(info.value, InputValidationError)
    assert isinstance(info.value, ValueError)
    assert fake_openai.count == 0


def test_engine_records_a_bad_row_as_an_input_failure(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    ev = IntentResolutionEvaluator(judge_config)
    outcome = asyncio.run(ev.ascore({"query": "Q?", "response": [{"role": "assistant"}]}))
    assert outcome.failed and outcome.error is not None and outcome.error.kind == "input"
    assert "'content' field" in outcome["intent_resolution_error"]


def test_evaluate_scores_message_lists_from_a_file(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], tmp_path: Path
) -> None:
    scripted(fake_openai, {"reason": "Good calls.", "score": 5})
    data = tmp_path / "agent.jsonl"
    rows = [
        {"query": QUERY, "response": RESPONSE, "tool_definitions": TOOLS},
        {"query": QUERY, "response": [RESPONSE[0]], "tool_definitions": TOOLS},
    ]
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = evaluate(
        data=str(data),
        evaluators={"tca": ToolCallAccuracyEvaluator(judge_config)},
        store=tmp_path / "runs.db",
    )
    first, second = result["rows"]
    assert first["outputs.tca.tool_call_accuracy"] == 5.0
    assert second["outputs.tca.tool_call_accuracy_result"] == "not_applicable"
    assert result.summary["tca.tool_call_accuracy"]["n"] == 1


@pytest.mark.parametrize(
    "name", ["response_completeness", "intent_resolution", "task_adherence", "tool_call_accuracy"]
)
def test_registry_lists_and_builds_them(name: str, judge_config: dict[str, str]) -> None:
    cls = registry.get(name)
    assert cls.needs_judge and name in registry.available()
    ev = registry.create(name, threshold=None, model_config=judge_config)
    assert isinstance(ev, AgentJudgeEvaluator)
    assert ev.options()["prompts"][name]["hash"] == load_prompt(name).hash
    assert "api_key" not in json.dumps(ev.options())
