"""What the agent evaluators share: the compatible SDK's reply shape (a :class:`Verdict` read from
``{"reason", "status", "score", "properties"}``), the "not applicable" reasons, and
:class:`AgentJudgeEvaluator`, which judges one row (or each turn of a conversation) and renders the
SDK's keys and value types (the score as a float, the threshold as given, ``m_status`` ``"skipped"``
with ``m_result`` ``"not_applicable"`` when a row cannot be judged)."""

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
    preprocess,
    render_messages,
)
from touchstone.evaluators.judge import JudgeEvaluator, ask
from touchstone.evaluators.judge.conversation import NOT_PROMOTED
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.judge.reply import Scale
from touchstone.judges.parsing import extract_json
from touchstone.scores import Outcome, Score

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

    async def _ascore(self, **inputs: Any) -> Outcome:
        self.validate(inputs)  # the engine checks kinds only; the message format is checked here
        conversation = inputs.get("conversation")
        if conversation is not None:
            return await self._conversation(conversation)
        return await self._one(inputs)

    async def _one(self, inputs: Mapping[str, Any]) -> Outcome:
        prepared = self.prepare(inputs)
        if isinstance(prepared, NotApplicable):
            return self.not_applicable(prepared.reason)
        return await self.judge_row(prepared)

    def prepare(self, inputs: Mapping[str, Any]) -> NotApplicable | dict[str, str | None]:
        """The prompt's data for one row, or why the row cannot be judged."""
        raise NotImplementedError

    # ------------------------------------------------------------------ judging
    async def judge_row(self, data: Mapping[str, str | None]) -> Outcome:
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

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outcome:
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
                row["query"] = turn_text(user.get("content", ""))
            if "response" in self.conversation_fields:
                row["response"] = turn_text(assistant.get("content", ""))
            if "ground_truth" in self.conversation_fields:
                row["ground_truth"] = turn_text(assistant.get("ground_truth", ""))
            rows.append(row)
        return rows

    async def _conversation(self, conversation: Mapping[str, Any]) -> Outcome:
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


def turn_text(content: Any) -> str:
    return content if isinstance(content, str) else content_text(content)


__all__ = [
    "AgentJudgeEvaluator",
    "NotApplicable",
    "Verdict",
    "verdict_reader",
    "verdict_schema",
]
