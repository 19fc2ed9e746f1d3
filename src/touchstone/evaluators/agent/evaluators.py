"""The agent evaluators of the compatible SDK: response completeness, intent resolution, task adherence
and tool call accuracy.

Each takes the SDK's inputs -- strings, or lists of agent messages with tool calls and tool results,
and tool definitions (see :mod:`.messages`) -- asks a judge once per row with a prompt of this
project's own (``prompts/<metric>.yaml``), and returns the SDK's keys with its value types: the score
as a float (``m``, ``m_score``; ``gpt_tool_call_accuracy`` too), ``m_passed``, ``m_result``,
``m_reason``, ``m_status``, ``m_threshold`` (as given, 3 by default) and ``m_properties`` (the judge's
details, the SDK's token counts and model, and touchstone's provenance).

When a row cannot be judged -- the agent has not finished (its last message is a pending call), no
tool call to judge, a called tool without a definition, or the judge says the input is empty -- the
result is **not applicable**: ``m`` is None, ``m_result`` is ``"not_applicable"``, ``m_status`` is
``"skipped"`` and ``m_reason`` says why. A judge reply that cannot be used gets one repair request,
then ``m_error``; never a guessed score.

With ``conversation=`` (``{"messages": [...]}``) each user/assistant pair is judged and the outputs are
combined as the SDK combines them: numbers by the mean (``conversation_aggregation``), other values
from the last turn, every turn's outputs under ``evaluation_per_turn``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from touchstone.evaluators.agent.judged import (
    MISSING_DEFINITIONS,
    NO_DEFINITIONS,
    NO_TOOL_CALLS,
    AgentJudgeEvaluator,
    NotApplicable,
)
from touchstone.evaluators.agent.messages import (
    INTERMEDIATE,
    definitions_for,
    is_intermediate,
    preprocess,
    render_definitions,
    render_messages,
    render_tool_calls,
    split_system,
    tool_calls_in,
)
from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge.conversation import no_exchange
from touchstone.evaluators.judge.reply import Scale
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

_QUERY = InputSpec(
    "query",
    "any",
    required=False,
    description="what the user asked: a string, or the messages up to the user's last one",
)
_RESPONSE = InputSpec(
    "response",
    "any",
    required=False,
    description="the agent's answer: a string, or its messages (tool calls and results)",
)
_TOOL_DEFINITIONS = InputSpec(
    "tool_definitions",
    "any",
    required=False,
    description="the tools the agent could call: [{name, description, parameters}]",
)
_CONVERSATION = InputSpec(
    "conversation",
    "any",
    required=False,
    description="a chat: {messages}, each user message paired with the next reply",
)


@register
class ResponseCompletenessEvaluator(AgentJudgeEvaluator):
    """How much of the ground truth's information the response carries (1-5): every statement of the
    ground truth is looked for in the response. Inputs: ``response`` and ``ground_truth`` (strings or
    messages), or ``conversation=`` (each assistant message's ``ground_truth``), or ``messages=`` with
    one ``ground_truth`` for every reply."""

    metric = "response_completeness"
    prefix = "response_completeness"
    score_key = "response_completeness"
    prompt_name = "response_completeness"
    inputs = (
        _RESPONSE,
        InputSpec("ground_truth", "any", required=False, description="the expected answer"),
        _CONVERSATION,
        InputSpec(
            "messages",
            "any",
            required=False,
            description="a chat's messages (with ground_truth: the expected answer of every reply)",
        ),
    )
    input_modes = (("response", "ground_truth"), ("conversation",), ("messages",))
    conversation_fields = ("response", "ground_truth")
    description = "LLM judge: does the response carry all of the ground truth's information (1-5)"

    def validate(self, inputs: Mapping[str, Any]) -> None:
        if not any(inputs.get(n) is not None for n in ("conversation", "messages")) and not (
            inputs.get("response") is not None and inputs.get("ground_truth") is not None
        ):
            raise self.checker.fail(
                None, f"{type(self).__name__}: Either 'conversation' or individual inputs must be provided."
            )
        if inputs.get("conversation") is not None or inputs.get("messages") is not None:
            value = inputs.get("conversation")
            if value is None:
                if inputs.get("messages") == []:
                    return  # the SDK judges nothing and returns {}
                value = {"messages": inputs.get("messages")}
            problem = self.checker.conversation_problem(value)
            if problem:
                raise problem
            return
        for name in ("response", "ground_truth"):
            value = inputs.get(name)
            if value is not None and not isinstance(value, (str, list)):
                label = "Ground truth" if name == "ground_truth" else "Response"
                raise self.checker.fail(name, f"{label} must be a string or a list of messages.")

    async def _ascore(self, **inputs: Any) -> Outcome:
        messages = inputs.get("messages")
        if inputs.get("conversation") is None and messages == []:
            return no_exchange(self)
        if inputs.get("conversation") is None and messages is not None:
            # the SDK reads a bare message list as a conversation, the row's ground truth stamped on
            # each reply that has none of its own
            gt = inputs.get("ground_truth")
            if gt is not None:
                messages = [
                    {**m, "ground_truth": gt}
                    if m.get("role") == "assistant" and "ground_truth" not in m
                    else m
                    for m in messages
                ]
            inputs = {"conversation": {"messages": messages}}
        return await super()._ascore(**inputs)

    def prepare(self, inputs: Mapping[str, Any]) -> NotApplicable | dict[str, str | None]:
        response = inputs.get("response")
        if is_intermediate(response):
            return NotApplicable(INTERMEDIATE)
        return {
            "response": self.messages_or_text(response if response is not None else ""),
            "ground_truth": self.messages_or_text(inputs.get("ground_truth", "")),
        }


class _QueryResponseEvaluator(AgentJudgeEvaluator):
    """Intent resolution and task adherence: ``query`` and ``response`` (strings or messages), optional
    ``tool_definitions``, or ``conversation=``; checked as the SDK checks them."""

    inputs = (_QUERY, _RESPONSE, _TOOL_DEFINITIONS, _CONVERSATION)
    input_modes = (("query", "response"), ("conversation",))

    def validate(self, inputs: Mapping[str, Any]) -> None:
        if inputs.get("conversation"):
            super().validate(inputs)
            return
        for problem in (
            self.checker.messages_problem(inputs.get("query"), "Query", "query"),
            self.checker.messages_problem(inputs.get("response"), "Response", "response"),
            self.checker.tool_definitions_problem(inputs.get("tool_definitions"), required=False),
        ):
            if problem:
                raise problem


@register
class IntentResolutionEvaluator(_QueryResponseEvaluator):
    """Whether the agent's reply resolves what the user wanted in their last message (1-5), judged in
    the light of the whole conversation (and of the tools the agent had, when given)."""

    metric = "intent_resolution"
    prefix = "intent_resolution"
    score_key = "intent_resolution"
    prompt_name = "intent_resolution"
    description = "LLM judge: does the agent's reply resolve the user's intent (1-5)"

    def prepare(self, inputs: Mapping[str, Any]) -> NotApplicable | dict[str, str | None]:
        response = inputs.get("response")
        if is_intermediate(response):
            return NotApplicable(INTERMEDIATE)
        definitions = inputs.get("tool_definitions")
        return {
            "query": self.messages_or_text(inputs.get("query", "")),
            "response": self.messages_or_text(response),
            "tool_definitions": render_definitions(definitions) if definitions else None,
        }


@register
class TaskAdherenceEvaluator(_QueryResponseEvaluator):
    """Whether the agent did the task it was given without a material failure (1 pass, 0 fail): the
    goal reached within its constraints, the rules of the system message and the user kept, the
    required procedure and tools followed (the tool calls are the evidence of what was done).

    As the compatible SDK does, a row passes when the score is 1 whatever ``threshold`` is, and
    ``task_adherence_threshold`` reports 3."""

    metric = "task_adherence"
    prefix = "task_adherence"
    score_key = "task_adherence"
    prompt_name = "task_adherence"
    scale = Scale(0, 1)
    value_range = "0-1"
    default_threshold = 1.0  # the score a row needs to pass; ``threshold`` does not change it
    sdk_default_threshold = 0
    description = "LLM judge: did the agent do its task without a material failure (0 fail, 1 pass)"

    def __init__(self, model_config: Any, *, threshold: float | None = 0, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)
        self.sdk_threshold = 3  # what the SDK reports, whatever threshold was given

    def passes(self, score: float) -> bool:
        return score >= 1.0

    def cutoff(self) -> float | None:
        return 1.0

    def prepare(self, inputs: Mapping[str, Any]) -> NotApplicable | dict[str, str | None]:
        response = inputs.get("response")
        if is_intermediate(response):
            return NotApplicable(INTERMEDIATE)
        system, query = split_system(preprocess(inputs.get("query", "")))
        definitions = inputs.get("tool_definitions")
        return {
            "system_message": system or None,
            "query": render_messages(query),
            "response": self.messages_or_text(response),
            "tool_definitions": render_definitions(definitions) if definitions else None,
        }


_COUNT = {"type": "integer"}
_TCA_DETAILS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tool_calls_made_by_agent": _COUNT,
        "correct_tool_calls_made_by_agent": _COUNT,
        "per_tool_call_details": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "tool_name": {"type": "string"},
                    "total_calls_required": _COUNT,
                    "correct_calls_made_by_agent": _COUNT,
                    "correct_tool_percentage": {"type": "number"},
                    "tool_call_errors": _COUNT,
                    "tool_success_result": {"type": "string", "enum": ["pass", "fail"]},
                },
                "required": [
                    "tool_name",
                    "total_calls_required",
                    "correct_calls_made_by_agent",
                    "correct_tool_percentage",
                    "tool_call_errors",
                    "tool_success_result",
                ],
                "additionalProperties": False,
            },
        },
        "excess_tool_calls": {
            "type": "object",
            "properties": {
                "total": _COUNT,
                "details": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"tool_name": {"type": "string"}, "excess_count": _COUNT},
                        "required": ["tool_name", "excess_count"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["total", "details"],
            "additionalProperties": False,
        },
        "missing_tool_calls": {
            "type": "object",
            "properties": {
                "total": _COUNT,
                "details": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "properties": {"tool_name": {"type": "string"}, "missing_count": _COUNT},
                        "required": ["tool_name", "missing_count"],
                        "additionalProperties": False,
                    },
                },
            },
            "required": ["total", "details"],
            "additionalProperties": False,
        },
    },
    "required": [
        "tool_calls_made_by_agent",
        "correct_tool_calls_made_by_agent",
        "per_tool_call_details",
        "excess_tool_calls",
        "missing_tool_calls",
    ],
    "additionalProperties": False,
}
"""The judge's counts of correct, excess and missing calls, reported in ``tool_call_accuracy_properties``
under the SDK's names."""


@register
class ToolCallAccuracyEvaluator(AgentJudgeEvaluator):
    """Whether the agent's tool calls, taken together, were the right ones with the right arguments
    (1-5): relevant to the user's request, parameters valid for the tool's definition and taken from
    the conversation rather than invented, nothing needed missing, nothing excessive.

    Inputs: ``query``, ``tool_definitions``, and the calls: the tool calls found in ``response``
    (messages, results attached by call id), else ``tool_calls``, else a string ``response`` as is.
    With no call to judge, or a called tool without a definition, the row is not applicable. Hosted
    tools (``code_interpreter``, ``bing_grounding``, ``file_search``...) need no definition."""

    metric = "tool_call_accuracy"
    prefix = "tool_call_accuracy"
    score_key = "tool_call_accuracy"
    prompt_name = "tool_call_accuracy"
    gpt_alias = True
    result_before_passed = True
    details_schema = _TCA_DETAILS
    inputs = (
        InputSpec("query", "any", description="the conversation up to the calls: a string or messages"),
        InputSpec("tool_definitions", "any", description="the tools the agent could call"),
        InputSpec(
            "tool_calls",
            "any",
            required=False,
            description="the calls to judge: [{type: tool_call, tool_call_id, name, arguments}]",
        ),
        _RESPONSE,
    )
    description = "LLM judge: were the agent's tool calls the right ones, with the right arguments (1-5)"

    def validate(self, inputs: Mapping[str, Any]) -> None:
        query_problem = self.checker.messages_problem(inputs.get("query"), "Query", "query")
        if query_problem:
            raise query_problem
        definitions_problem = self.checker.tool_definitions_problem(
            inputs.get("tool_definitions"), required=True
        )
        if definitions_problem:
            raise definitions_problem
        response = inputs.get("response")
        response_problem = self.checker.messages_problem(response, "Response", "response")
        calls_problem = self.checker.tool_calls_problem(inputs.get("tool_calls"))
        if response_problem and calls_problem:
            # as the SDK: a missing response defers to the tool calls' problem, else the response's
            raise calls_problem if response is None or response in ("", []) else response_problem

    def prepare(self, inputs: Mapping[str, Any]) -> NotApplicable | dict[str, str | None]:
        response = inputs.get("response")
        calls: Any = inputs.get("tool_calls")
        definitions: Any = inputs.get("tool_definitions") or []
        if response:
            found = tool_calls_in(response)
            if found:
                calls = found  # the SDK prefers the calls found in the response
        if not calls:
            if isinstance(response, str) and response:
                calls = response
            else:
                return NotApplicable(NO_TOOL_CALLS)
        if not isinstance(calls, (list, str)):
            calls = [calls]
        if not isinstance(definitions, (list, str)):
            definitions = [definitions] if definitions else []
        needed: Any
        if isinstance(calls, str) or isinstance(definitions, str):
            needed = definitions
        else:
            needed = definitions_for(calls, definitions)
            if needed is None:
                return NotApplicable(MISSING_DEFINITIONS if definitions else NO_DEFINITIONS)
        if not needed:
            return NotApplicable(NO_DEFINITIONS)
        return {
            "query": self.messages_or_text(inputs.get("query")),
            "tool_calls": render_tool_calls(calls),
            "tool_definitions": render_definitions(needed),
        }


__all__ = [
    "IntentResolutionEvaluator",
    "ResponseCompletenessEvaluator",
    "TaskAdherenceEvaluator",
    "ToolCallAccuracyEvaluator",
]
