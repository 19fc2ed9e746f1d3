"""The base class of every LLM-judged metric: a model configuration, a threshold (3 on the 1-5 scale
by default), ``score_mode`` (``"sampled"`` or ``"logprobs"``), conversations judged turn by turn
(:mod:`touchstone.evaluators.judge.conversation`), and outputs rendered as the compatible SDK renders
them (``gpt_<m>`` kept as an alias of ``<m>``)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, ClassVar, Literal

from touchstone._exceptions import ErrorCategory
from touchstone.errors import (
    ConfigurationError,
    InputValidationError,
    Problem,
    missing_input_classification,
)
from touchstone.evaluators.base import Evaluator, check_options
from touchstone.evaluators.judge.conversation import (
    bare_messages_problem,
    messages_as_conversation,
    score_conversation,
)
from touchstone.evaluators.judge.model_config import check_model_config, describe_judge, no_judge_error
from touchstone.evaluators.judge.primitive import (
    SCORE_MODES,
    Judgement,
    JudgeReplyError,
    ScoreMode,
    judge,
)
from touchstone.evaluators.judge.prompts import PromptTemplate
from touchstone.evaluators.judge.reply import Scale
from touchstone.scores import Outcome, Score

Aggregation = Literal["min", "mean", "max"]
AGGREGATIONS = ("min", "mean", "max")
SDK_ONLY_OPTIONS = ("eval_last_turn", "_higher_is_better", "conversation_aggregation_type",
                    "conversation_aggregator_override")
"""Options the compatible SDK's judge evaluators accept that change nothing here; any other unknown
option is an error naming the closest valid one."""


def check_score_mode(score_mode: str) -> ScoreMode:
    if score_mode not in SCORE_MODES:
        raise ConfigurationError(f"score_mode must be one of {', '.join(SCORE_MODES)}, got {score_mode!r}")
    return score_mode  # type: ignore[return-value]


def check_aggregation(how: str) -> Aggregation:
    if how not in AGGREGATIONS:
        raise ConfigurationError(
            f"conversation_aggregation must be one of {', '.join(AGGREGATIONS)}, got {how!r}"
        )
    return how  # type: ignore[return-value]


def check_conversation_mode(mode: str) -> str:
    if mode not in ("sdk", "history"):
        raise ConfigurationError(f"conversation_mode must be one of sdk, history, got {mode!r}")
    return mode


def as_given(threshold: float | None) -> float | None:
    """A default threshold as the SDK writes it: a whole number as an int (``3``, not ``3.0``)."""
    if isinstance(threshold, float) and threshold.is_integer():
        return int(threshold)
    return threshold


class JudgeEvaluator(Evaluator):
    """Base of the LLM-judged metrics: a model configuration, a threshold (default 3 on the 1–5
    scale), ``score_mode`` (``"sampled"`` or ``"logprobs"``) and, for conversations, the aggregation
    of per-turn scores. Outputs follow SPEC 3 with ``gpt_<m>`` kept as an alias of ``<m>``."""

    needs_judge = True
    is_async = True
    tier = "medium"
    default_threshold: ClassVar[float | None] = 3.0
    value_range = "1-5"
    scale: ClassVar[Scale] = Scale(1, 5)
    default_aggregation: ClassVar[Aggregation] = "mean"
    gpt_alias: ClassVar[bool] = True
    messages_input: ClassVar[str | None] = None
    """Whether the metric takes the SDK's bare ``messages=[...]`` (read as a conversation, see
    :func:`touchstone.evaluators.judge.conversation.messages_as_conversation`): None when it does not,
    ``"checked"`` when the messages are checked first as the SDK checks them (relevance, fluency),
    ``"as_is"`` when they are read unchecked, an empty list judging nothing (the SDK's retrieval)."""

    def __init__(
        self,
        model_config: Any,
        *,
        threshold: float | None = None,
        score_mode: str = "sampled",
        conversation_aggregation: str | None = None,
        conversation_mode: str = "sdk",
        credential: Any = None,
        is_reasoning_model: bool | None = None,
        **sdk_options: Any,
    ) -> None:
        check_options(type(self).__name__, sdk_options, (*self.option_names(), *SDK_ONLY_OPTIONS))
        super().__init__(threshold=threshold)
        # conversations (judge/conversation.py): the SDK's pairs or touchstone's turns with history,
        # and the SDK's option to judge only the last exchange
        self.conversation_mode: str = check_conversation_mode(conversation_mode)
        self.eval_last_turn: bool = bool(sdk_options.get("eval_last_turn", False))
        # The SDK reports the threshold as the user gave it (an int by default: 3); comparisons and
        # the typed Scores use the float in ``self.threshold``.
        self.sdk_threshold: float | None = (
            threshold if threshold is not None else as_given(self.default_threshold)
        )
        if model_config is None:
            raise no_judge_error(self.metric)
        if not self.judge_optional():
            check_model_config(model_config)
        if (
            is_reasoning_model is not None
            and isinstance(model_config, Mapping)
            and not hasattr(model_config, "model_name")
        ):
            model_config = {**model_config, "is_reasoning_model": is_reasoning_model}
        self.model_config = model_config
        self.credential = credential
        self.score_mode: ScoreMode = check_score_mode(score_mode)
        self.conversation_aggregation: Aggregation = check_aggregation(
            conversation_aggregation or self.default_aggregation
        )
        self._client: Any = None

    def judge_optional(self) -> bool:
        """Whether this instance can score without a judge (its model configuration is then not
        checked when it is built). Default: no."""
        return False

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Every keyword option the class's constructors take (for the unknown-option check)."""
        names: list[str] = []
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            for p in inspect.signature(init).parameters.values():
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in (
                    "self",
                    "model_config",
                ):
                    names.append(p.name)
        return tuple(dict.fromkeys(names))

    @classmethod
    def from_options(
        cls,
        *,
        model_config: Any = None,
        threshold: float | None = None,
        score_mode: str | None = None,
        conversation_aggregation: str | None = None,
        **_: Any,
    ) -> JudgeEvaluator:
        """The registry's factory (CLI): a clear error when no judge is configured."""
        if model_config is None:
            raise no_judge_error(cls.metric)
        return cls(
            model_config,
            threshold=threshold,
            score_mode=score_mode or "sampled",
            conversation_aggregation=conversation_aggregation,
        )

    def client(self) -> Any:
        if self._client is None:
            from touchstone.judges.client import get_judge_client

            self._client = get_judge_client(self.model_config)
        return self._client

    def prompts(self) -> list[PromptTemplate]:
        """The prompts this metric may use (their versions and hashes go into the run's provenance)."""
        return []

    def options(self) -> dict[str, Any]:
        return {
            **super().options(),
            "score_mode": self.score_mode,
            "conversation_aggregation": self.conversation_aggregation,
            "conversation_mode": self.conversation_mode,
            "eval_last_turn": self.eval_last_turn,
            "judge": describe_judge(self.model_config),
            "prompts": {p.name: {"version": p.version, "hash": p.hash} for p in self.prompts()},
        }

    # ------------------------------------------------------------------ outputs
    def result(
        self, score: float, *, reason: str | None = None, properties: Any = None, **extra: Any
    ) -> Outcome:
        """The outcome of a judged row, rendered as the SDK renders it: the score as a float (``4.0``
        whether the judge sampled ``4`` or the log-probability expectation gave ``3.87``), the
        threshold as given (``3``). The typed Score keeps the value as obtained."""
        out = super().result(score, reason=reason, properties=properties, **extra)
        rendered = float(score)
        key, m = self.info.key, self.info.prefix
        out[key] = out[f"{m}_score"] = rendered
        if self.gpt_alias:
            out[f"gpt_{self.score_key}"] = rendered
        out[f"{m}_threshold"] = self.sdk_threshold
        return out

    def not_applicable(self, reason: str) -> Outcome:
        """The SDK's result for a row that cannot be judged (an agent's unfinished response, nothing
        to judge against): no score, ``m_result`` ``"not_applicable"``, ``m_status`` ``"skipped"``.
        The Score has no value and the label ``not_applicable`` (it is not a failure)."""
        m, key = self.info.prefix, self.info.key
        text = f"Not applicable: {reason}"
        out: dict[str, Any] = {
            key: None, f"{m}_score": None, f"{m}_passed": None, f"{m}_result": "not_applicable",
            f"{m}_reason": text, f"{m}_status": "skipped", f"{m}_threshold": self.sdk_threshold,
            f"{m}_properties": None,
        }
        return Outcome([Score(key, None, label="not_applicable", reason=text, threshold=self.threshold)], out)

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outcome:
        out = super().failure(error, kind=kind)
        out[f"{self.prefix}_threshold"] = self.sdk_threshold
        props: dict[str, Any] = {"judge_model": describe_judge(self.model_config).get("model")}
        if isinstance(error, JudgeReplyError) and error.reply is not None:
            props["last_reply"] = error.reply[:2000]
        out[f"{self.prefix}_properties"] = props
        return out

    async def _judge(
        self,
        prompt: PromptTemplate,
        data: Mapping[str, str | None],
        **kwargs: Any,
    ) -> Judgement:
        kwargs.setdefault("score_mode", self.score_mode)
        kwargs.setdefault("scale", self.scale)
        return await judge(self.client(), prompt, data, **kwargs)

    def judged(self, j: Judgement, **extra: Any) -> Outcome:
        """Outputs of one judgement."""
        return self.result(j.score, reason=j.reason, properties=j.properties, **extra)

    # ------------------------------------------------------------------ calling
    def check_call_inputs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The base checks, after a bare ``messages=[...]`` is read as a conversation (where the
        metric takes one: :attr:`messages_input`)."""
        if self.messages_input is None or kwargs.get("messages") is None:
            return super().check_call_inputs(kwargs)
        if self.messages_input == "checked":
            problem = bare_messages_problem(kwargs["messages"])
            if problem is not None:
                _, target = missing_input_classification(type(self))
                raise InputValidationError([Problem(self.metric, None, "messages", problem)],
                                           category=ErrorCategory.INVALID_VALUE, target=target)
        inputs = messages_as_conversation(kwargs)
        conversation = inputs.get("conversation")
        if isinstance(conversation, Mapping) and conversation.get("messages") == []:
            # unchecked, an empty message list has no exchange to judge (the SDK returns {})
            return {k: v for k, v in inputs.items() if v is not None}
        return super().check_call_inputs(inputs)

    # ------------------------------------------------------------------ dispatch
    async def _ascore(self, **inputs: Any) -> Outcome:
        if self.messages_input is not None and inputs.get("messages") is not None:
            inputs = messages_as_conversation(inputs)
        conversation = inputs.get("conversation")
        if conversation is not None:
            return await score_conversation(self, conversation, inputs)
        return await self._single(**inputs)

    async def _single(self, **inputs: Any) -> Outcome:
        raise NotImplementedError

    async def _turn(self, turn: Any) -> Outcome:
        """Outputs for one assistant turn of a conversation (see :mod:`.conversation`)."""
        raise NotImplementedError(f"{self.metric} does not take a conversation")
