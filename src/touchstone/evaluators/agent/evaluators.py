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

import asyncio
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from touchstone.evaluators.agent.messages import (
    AgentInputError,
    Checker,
    content_text,
    definitions_for,
    is_intermediate,
    preprocess,
    render_definitions,
    render_messages,
    render_tool_calls,
    split_system,
    tool_calls_in,
)
from touchstone.evaluators.base import InputSpec, Outputs
from touchstone.evaluators.conversation import NOT_PROMOTED, no_exchange
from touchstone.evaluators.judging import JudgeEvaluator, ask
from touchstone.evaluators.parsing import Scale
from touchstone.evaluators.prompting import PromptTemplate, load_prompt
from touchstone.evaluators.registry import register
from touchstone.judges.parsing import extract_json
from touchstone.scores import Outcome, Score

INTERMEDIATE = "Intermediate response. Please provide the agent's final response for evaluation."
NO_TOOL_CALLS = "No tool calls found in response or provided tool_calls."
NO_DEFINITIONS = "Tool definitions input is required but not provided"
MISSING_DEFINITIONS = "Tool definitions for all tool calls must be provided."


@dataclass
class NotApplicable:
    """Why a row cannot be judged (the SDK's "not applicable" result)."""

    reason: str


@dataclass
class Verdict:
    """What was read from the judge's reply."""

    status: str
    score: float | None
    reason: str
    details: dict[str, Any] = field(default_factory=dict)


def verdict_schema(values: Sequence[int], details: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The reply's JSON schema: ``reason`` first (the judge reasons before committing), the optional
    ``properties`` details, ``status`` (``completed``, or ``skipped`` when the input is empty) and the
    ``score`` (null when skipped)."""
    props: dict[str, Any] = {"reason": {"type": "string"}}
    if details is not None:
        props["properties"] = dict(details)
    props["status"] = {"type": "string", "enum": ["completed", "skipped"]}
    props["score"] = {"type": ["integer", "null"], "enum": [*values, None]}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def verdict_reader(
    low: float, high: float, *, integral: bool = False
) -> Callable[[str], tuple[Verdict | None, str | None]]:
    """A reader of replies ``{"reason", "status"?, "score", "properties"?}``: a score on ``low..high``
    (only whole values when ``integral``), or ``"status": "skipped"``."""

    def read(text: str) -> tuple[Verdict | None, str | None]:
        obj = extract_json(text)
        if obj is None:
            return None, "the reply holds no JSON object"
        reason = obj.get("reason")
        reason_text = reason if isinstance(reason, str) else ("" if reason is None else json.dumps(reason))
        details = obj.get("properties")
        extra = dict(details) if isinstance(details, Mapping) else {}
        if obj.get("status") == "skipped":
            return Verdict("skipped", None, reason_text), None
        if "score" not in obj or obj["score"] is None:
            return None, 'the reply has no "score"'
        raw = obj["score"]
        try:
            if isinstance(raw, bool):
                raise ValueError
            value = float(raw)
        except (TypeError, ValueError):
            return None, f'"score" is not a number: {str(raw)[:40]!r}'
        if not math.isfinite(value) or not low <= value <= high or (integral and not value.is_integer()):
            kind = "an integer" if integral else "a number"
            return None, f'"score" {raw!r} is not {kind} from {low:g} to {high:g}'
        return Verdict("completed", value, reason_text, extra), None

    return read


class AgentJudgeEvaluator(JudgeEvaluator):
    """Base of the agent evaluators: one judgement per row (or per turn of a conversation) read as a
    :class:`Verdict`, rendered with the compatible SDK's keys and value types."""

    gpt_alias = False
    scale: ClassVar[Scale] = Scale(1, 5)
    prompt_name: ClassVar[str] = ""
    details_schema: ClassVar[Mapping[str, Any] | None] = None
    result_before_passed: ClassVar[bool] = False
    """The SDK's tool call accuracy writes ``m_result`` before ``m_passed``; the others after."""
    conversation_fields: ClassVar[tuple[str, ...]] = ("query", "response")
    """What each user/assistant pair of a conversation gives: the user's message as ``query``, the
    assistant's as ``response``, the assistant message's ``ground_truth`` as ``ground_truth``."""

    sdk_default_threshold: ClassVar[float] = 3
    """The SDK's default threshold, reported as it writes it (an int)."""

    def __init__(
        self, model_config: Any, *, threshold: float | None = 3, eval_last_turn: bool = False, **kwargs: Any
    ) -> None:
        if threshold is None:
            threshold = self.sdk_default_threshold
        super().__init__(model_config, threshold=threshold, **kwargs)
        # The SDK reports the threshold as given (an int by default); comparisons use the float.
        self.sdk_threshold: float | None = threshold
        self.eval_last_turn = bool(eval_last_turn)
        self.checker = Checker(self.metric)

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt(self.prompt_name)]

    def options(self) -> dict[str, Any]:
        return {**super().options(), "eval_last_turn": self.eval_last_turn}

    # ------------------------------------------------------------------ calling
    def check_call_inputs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The SDK's message checks (with its messages, a missing input included), then the base checks
        (known inputs, one complete input set), so a direct call raises before anything is sent."""
        self.validate({k: v for k, v in kwargs.items() if v is not None})
        return super().check_call_inputs(kwargs)

    def validate(self, inputs: Mapping[str, Any]) -> None:
        """Raise :class:`AgentInputError` when an input is not in the SDK's message format."""
        conversation = inputs.get("conversation")
        if conversation:
            problem = self.checker.conversation_problem(conversation)
            if problem:
                raise problem

    async def _ascore(self, **inputs: Any) -> Outputs:
        self.validate(inputs)  # the engine checks kinds only; the message format is checked here
        conversation = inputs.get("conversation")
        if conversation is not None:
            return await self._conversation(conversation)
        return await self._one(inputs)

    async def _one(self, inputs: Mapping[str, Any]) -> Outputs:
        prepared = self.prepare(inputs)
        if isinstance(prepared, NotApplicable):
            return self.not_applicable(prepared.reason)
        return await self.judge_row(prepared)

    def prepare(self, inputs: Mapping[str, Any]) -> NotApplicable | dict[str, str | None]:
        """The prompt's data for one row, or why the row cannot be judged."""
        raise NotImplementedError

    # ------------------------------------------------------------------ judging
    async def judge_row(self, data: Mapping[str, str | None]) -> Outputs:
        prompt = load_prompt(self.prompt_name)
        schema = verdict_schema(self.scale.values, self.details_schema)
        read = verdict_reader(self.scale.low, self.scale.high)
        answer = await ask(self.client(), prompt, data, read, schema=schema, what="verdict")
        verdict = answer.value
        if verdict.status == "skipped":
            return self.not_applicable(verdict.reason)
        reply = answer.reply
        usage = getattr(reply, "usage", None)
        prompt_tokens = int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens = int(getattr(usage, "completion_tokens", 0) or 0)
        props: dict[str, Any] = dict(verdict.details)
        sdk = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "finish_reason": getattr(reply, "finish_reason", None) or "",
            "model": getattr(reply, "model", None) or answer.properties.get("judge_model") or "",
            "sample_input": json.dumps(prompt.render(data), ensure_ascii=False),
            "sample_output": json.dumps([{"role": "assistant", "content": answer.text}], ensure_ascii=False),
        }
        for key, value in {**sdk, **answer.properties}.items():
            props.setdefault(key, value)
        props["score_mode"] = "sampled"
        if self.score_mode == "logprobs":
            props["logprobs_fallback"] = f"{self.metric} reports the sampled score only"
        assert verdict.score is not None
        return self.verdict_result(verdict.score, verdict.reason, props)

    def passes(self, score: float) -> bool:
        assert self.threshold is not None
        return score >= self.threshold

    def verdict_result(self, score: float, reason: str, properties: dict[str, Any]) -> Outcome:
        """The SDK's outputs of a judged row (the score as a float, the threshold as given)."""
        m, key = self.prefix, self.score_key
        score = float(score)
        passed = self.passes(score)
        out: dict[str, Any] = {key: score}
        if self.result_before_passed:
            out[f"gpt_{key}"] = score
        out[f"{m}_score"] = score
        verdict_keys = {f"{m}_passed": passed, f"{m}_result": "pass" if passed else "fail"}
        if self.result_before_passed:
            verdict_keys = dict(reversed(list(verdict_keys.items())))
        out.update(verdict_keys)
        out[f"{m}_reason"] = reason
        out[f"{m}_status"] = "completed"
        out[f"{m}_threshold"] = self.sdk_threshold
        out[f"{m}_properties"] = properties
        main = Score(key, score, reason=reason, passed=passed, threshold=self.cutoff(), properties=properties)
        return Outcome([main], out)

    def cutoff(self) -> float | None:
        """The score a row needs to pass (kept in the typed Score)."""
        return self.threshold

    def not_applicable(self, reason: str) -> Outcome:
        """The SDK's result for a row that cannot be judged."""
        m, key = self.prefix, self.score_key
        text = f"Not applicable: {reason}"
        out: dict[str, Any] = {
            key: None,
            f"{m}_score": None,
            f"{m}_passed": None,
            f"{m}_result": "not_applicable",
            f"{m}_reason": text,
            f"{m}_status": "skipped",
            f"{m}_threshold": self.sdk_threshold,
            f"{m}_properties": None,
        }
        return Outcome([Score(key, None, label="not_applicable", reason=text, threshold=self.cutoff())], out)

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outputs:
        out = super().failure(error, kind=kind)
        out[f"{self.prefix}_threshold"] = self.sdk_threshold
        return out

    # ------------------------------------------------------------------ conversations
    def turns(self, conversation: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The SDK's split of a conversation: the i-th user message with the i-th assistant message
        (only the last two messages with ``eval_last_turn``)."""
        messages = list(conversation.get("messages") or [])
        if self.eval_last_turn and len(messages) > 1:
            messages = messages[-2:]
        users = [m for m in messages if m.get("role") == "user"]
        assistants = [m for m in messages if m.get("role") == "assistant"]
        rows = []
        for user, assistant in zip(users, assistants, strict=False):
            row: dict[str, Any] = {}
            if "query" in self.conversation_fields:
                row["query"] = _turn_text(user.get("content", ""))
            if "response" in self.conversation_fields:
                row["response"] = _turn_text(assistant.get("content", ""))
            if "ground_truth" in self.conversation_fields:
                row["ground_truth"] = _turn_text(assistant.get("ground_truth", ""))
            rows.append(row)
        return rows

    async def _conversation(self, conversation: Mapping[str, Any]) -> Outputs:
        rows = self.turns(conversation)
        if not rows:
            raise AgentInputError(
                self.metric,
                "conversation",
                "The conversation has no user message followed by an assistant message.",
            )
        outs = list(await asyncio.gather(*(self._one(row) for row in rows)))
        if len(outs) == 1:
            return outs[0]
        return self.combine(outs)

    def combine(self, outs: Sequence[Outcome]) -> Outcome:
        """A conversation's outputs from its turns' outputs, as the SDK combines them."""
        per_turn: dict[str, list[Any]] = {}
        for out in outs:
            for k, v in out.items():
                per_turn.setdefault(k, []).append(v)
        combined: dict[str, Any] = {}
        for k, values in per_turn.items():
            if all(isinstance(v, (int, float)) for v in values):
                combined[k] = self._aggregate(values)
            elif k and not k.endswith(NOT_PROMOTED) and values:
                combined[k] = values[-1]
        combined["evaluation_per_turn"] = per_turn
        scores = [s.value for o in outs for s in o.scores[:1] if s.value is not None]
        value = self._aggregate(scores) if scores else None
        last = outs[-1].main
        main = Score(
            self.score_key,
            None if value is None else float(value),
            label=None if value is not None else "not_applicable",
            reason=last.reason if last else None,
            passed=None if value is None else self.passes(float(value)),
            threshold=self.cutoff(),
            properties={"turns": len(outs), "aggregation": self.conversation_aggregation},
        )
        return Outcome([main], combined)

    def _aggregate(self, values: Sequence[float]) -> float:
        if self.conversation_aggregation == "min":
            return min(values)
        if self.conversation_aggregation == "max":
            return max(values)
        return sum(values) / len(values) if values else math.nan

    # ------------------------------------------------------------------ helpers
    def messages_or_text(self, value: Any, *, tools: bool = True, system: bool = True) -> str:
        return render_messages(preprocess(value), tools=tools, system=system)


def _turn_text(content: Any) -> str:
    return content if isinstance(content, str) else content_text(content)


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

    async def _ascore(self, **inputs: Any) -> Outputs:
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
    "AgentJudgeEvaluator",
    "IntentResolutionEvaluator",
    "NotApplicable",
    "ResponseCompletenessEvaluator",
    "TaskAdherenceEvaluator",
    "ToolCallAccuracyEvaluator",
    "Verdict",
    "verdict_reader",
    "verdict_schema",
]
