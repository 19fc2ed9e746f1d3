"""The SDK's bare ``messages=[...]`` argument (relevance, fluency, retrieval, response completeness):
read as a conversation with the single-row inputs beside it, checked as the SDK checks it."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone import EvaluationException
from touchstone._exceptions import ErrorCategory
from touchstone.evaluators.agent import ResponseCompletenessEvaluator
from touchstone.evaluators.judge.conversation import bare_messages_problem, messages_as_conversation
from touchstone.evaluators.prompt_metrics import CoherenceEvaluator, FluencyEvaluator
from touchstone.evaluators.quality import RelevanceEvaluator
from touchstone.evaluators.retrieval_judge import RetrievalEvaluator

CHAT: list[dict[str, Any]] = [
    {"role": "system", "content": "You answer geography questions."},
    {"role": "user", "content": "Capital of France?"},
    {"role": "assistant", "content": "Paris. [J5]"},
    {"role": "user", "content": "And of Italy?"},
    {"role": "assistant", "content": "I like walks. [J2]"},
]


def _marker_judge(fake: FakeOpenAIServer) -> list[FakeRequest]:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        found = re.findall(r"\[J(\d)\]", req.last_user)
        return json.dumps({"reason": "r", "score": int(found[-1]) if found else 4, "documents": [],
                           "intent": "i", "thought_chain": "t"})

    fake.handler = handler
    return seen


def test_messages_become_a_conversation_without_changing_the_callers_list() -> None:
    messages = [{"role": "user", "content": "q"}, {"role": "tool", "content": "x"},
                {"role": "assistant", "content": "a"}]
    out = messages_as_conversation({"messages": messages, "context": "c", "ground_truth": "g",
                                    "tool_definitions": [{"name": "t"}]})
    assert set(out) == {"conversation"}
    conv = out["conversation"]
    assert conv["context"] == "c" and conv["tool_definitions"] == [{"name": "t"}]
    assert [m["role"] for m in conv["messages"]] == ["user", "assistant"]
    assert conv["messages"][1]["ground_truth"] == "g" and "ground_truth" not in messages[2]
    own = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "ground_truth": "mine"}]
    assert messages_as_conversation({"messages": own, "ground_truth": "g"})["conversation"]["messages"] == own
    # a conversation given as well wins; the messages are dropped
    given: dict[str, Any] = {"messages": []}
    assert messages_as_conversation({"messages": own, "conversation": given}) == {"conversation": given}


@pytest.mark.parametrize(
    ("messages", "fragment"),
    [
        ("hello", "must be provided as a list"),
        ([], "must not be empty"),
        (["hi"], "index 0 is str"),
        ([{"content": "hi"}], "missing it"),
        ([{"role": "bot", "content": "hi"}], "Invalid role 'bot'"),
        ([{"role": "assistant", "content": "hi"}], "role 'user'"),
        ([{"role": "user", "content": "hi"}], "role 'assistant'"),
    ],
)
def test_bare_messages_problems(messages: Any, fragment: str) -> None:
    problem = bare_messages_problem(messages)
    assert problem is not None and fragment in problem


def test_developer_and_tool_roles_are_accepted() -> None:
    messages = [{"role": "developer", "content": "x"}, {"role": "user", "content": "q"},
                {"role": "tool", "content": "r"}, {"role": "assistant", "content": "a"}]
    assert bare_messages_problem(messages) is None


def test_relevance_and_fluency_judge_each_exchange(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = _marker_judge(fake_openai)
    out = RelevanceEvaluator(judge_config)(messages=CHAT)
    assert len(seen) == 2
    assert out["evaluation_per_turn"]["relevance"] == [5.0, 2.0] and out["relevance"] == 3.5
    assert out["relevance_passed"] == 0.5 and out["relevance_result"] == "fail"
    one = FluencyEvaluator(judge_config, threshold=4)(messages=CHAT[1:3], context="ignored")
    assert one["fluency"] == 5.0 and one["fluency_passed"] is True and "evaluation_per_turn" not in one


@pytest.mark.parametrize("messages", ["hello", [], [{"role": "user", "content": "q"}],
                                      [{"role": "bot", "content": "q"}]])
def test_checked_messages_raise_invalid_value_before_any_call(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], messages: Any
) -> None:
    seen = _marker_judge(fake_openai)
    for evaluator in (RelevanceEvaluator(judge_config), FluencyEvaluator(judge_config)):
        with pytest.raises(EvaluationException) as info:
            evaluator(messages=messages)
        assert info.value.category == ErrorCategory.INVALID_VALUE
    assert not seen


def test_messages_with_single_row_inputs_is_an_error(judge_config: dict[str, str]) -> None:
    with pytest.raises(EvaluationException) as info:
        RelevanceEvaluator(judge_config)(messages=CHAT, query="q", response="r")
    assert info.value.category == ErrorCategory.INVALID_VALUE


def test_retrieval_reads_the_context_as_the_global_context_and_empty_messages_judge_nothing(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = _marker_judge(fake_openai)
    out = RetrievalEvaluator(judge_config)(messages=CHAT[1:3], context="Paris is the capital. [J3]")
    assert out["retrieval"] == 3.0 and "global_context" in seen[-1].last_user
    assert RetrievalEvaluator(judge_config)(messages=[]) == {}
    assert RetrievalEvaluator(judge_config)(messages=[{"role": "user", "content": "q"}]) == {}
    assert ResponseCompletenessEvaluator(judge_config)(messages=[]) == {}


def test_an_evaluator_without_messages_rejects_them(judge_config: dict[str, str]) -> None:
    with pytest.raises(EvaluationException) as info:
        CoherenceEvaluator(judge_config)(messages=CHAT)
    assert info.value.category == ErrorCategory.MISSING_FIELD
