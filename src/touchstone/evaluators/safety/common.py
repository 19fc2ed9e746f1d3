"""The base of the safety evaluators: the SDK's constructor options (``azure_ai_project``,
``credential``, ``evaluate_query``...) read once, conversations judged exchange by exchange as the
SDK judges them, and the row failures the SDK's keys expect."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge import JudgeEvaluator, no_judge_error
from touchstone.evaluators.judge.conversation import (
    check_not_mixed,
    exchange_inputs,
    gather_outputs,
    no_exchange,
    per_turn_columns,
)
from touchstone.evaluators.safety.severity import (
    RAI_ONLY_OPTIONS,
    check_defect_level,
    check_not_credential,
    warn_no_cloud,
)
from touchstone.scores import ErrorKind, Outcome

QUERY = InputSpec("query", "text", required=False, description="what the user asked (context for the judge)")
RESPONSE = InputSpec("response", "text", required=False, description="the application's answer (judged)")
CONVERSATION = InputSpec(
    "conversation", "conversation", required=False, description="a chat: {messages, context?}"
)


class SafetyJudge(JudgeEvaluator):
    """Base of the judged safety metrics. Takes ``model_config`` (any judge) where the compatible SDK
    takes ``azure_ai_project`` and ``credential``: both are accepted, ``credential`` silently and
    ``azure_ai_project`` with one warning that nothing is sent to a cloud service.

    Conversations are judged as the SDK judges them: each user message with its assistant message
    (``eval_last_turn``: the last exchange only), each exchange scored as a single row, the outputs
    combined (:meth:`combine`)."""

    is_async = True
    tier = "medium"
    gpt_alias = False
    turn_inputs: ClassVar[frozenset[str]] = frozenset({"query", "response"})
    default_evaluate_query: ClassVar[bool] = False
    defect_levels: ClassVar[tuple[int, ...]] = (0, 1)
    default_defect_level: ClassVar[float] = 1.0

    def __init__(
        self,
        model_config: Any = None,
        *,
        azure_ai_project: Any = None,
        evaluate_query: bool | None = None,
        defect_level: float | None = None,
        **kwargs: Any,
    ) -> None:
        name = type(self).__name__
        check_not_credential(name, model_config)
        if azure_ai_project is not None:
            warn_no_cloud(name)
        for option in RAI_ONLY_OPTIONS:
            kwargs.pop(option, None)
        if kwargs.get("conversation_mode", "sdk") != "sdk":
            raise ConfigurationError(
                f"{name} judges conversations exchange by exchange (conversation_mode='sdk')"
            )
        if model_config is None and not self.judge_optional():
            raise no_judge_error(self.metric)
        super().__init__(model_config if model_config is not None else {}, **kwargs)
        self.model_config = model_config
        self.evaluate_query: bool = (
            self.default_evaluate_query if evaluate_query is None else bool(evaluate_query)
        )
        self.defect_level: float = check_defect_level(
            self.default_defect_level if defect_level is None else defect_level, self.defect_levels
        )

    def judge_optional(self) -> bool:
        """Whether this instance can score without a judge (protected material with a corpus)."""
        return False

    @classmethod
    def from_options(
        cls,
        *,
        model_config: Any = None,
        threshold: float | None = None,
        score_mode: str | None = None,
        defect_level: float | None = None,
        **_: Any,
    ) -> JudgeEvaluator:
        """The registry's factory (CLI): judge, threshold, score mode and defect level."""
        if model_config is None:
            raise no_judge_error(cls.metric)
        options: dict[str, Any] = {"score_mode": score_mode or "sampled", "defect_level": defect_level}
        if threshold is not None:
            options["threshold"] = threshold
        return cls(model_config, **options)

    def options(self) -> dict[str, Any]:
        out = {**super().options(), "evaluate_query": self.evaluate_query, "defect_level": self.defect_level}
        if self.model_config is None:
            out["judge"] = None
        return out

    def aggregator_options(self) -> dict[str, Any]:
        """The summary's defect rate at ``defect_level`` and the rate at each level of the scale."""
        return {"defect_level": self.defect_level, "levels": list(self.defect_levels)}

    # ------------------------------------------------------------------ conversations
    async def _ascore(self, **inputs: Any) -> Outcome:
        conversation = inputs.get("conversation")
        if conversation is None:
            return await self._single(**inputs)
        check_not_mixed(self, inputs)
        rows = exchange_inputs(conversation, self.turn_inputs, last_turn=self.eval_last_turn)
        if not rows:
            return no_exchange(self)
        outs = await gather_outputs(self, [self._single(**row) for row in rows])
        return self.combine(outs)

    def combine(self, outs: Sequence[Outcome]) -> Outcome:
        """The conversation's outputs from its exchanges' (one exchange: as it is)."""
        failed = self.failed_turn(outs)
        if failed is not None:
            return failed
        return outs[0] if len(outs) == 1 else self.combine_turns(outs)

    def combine_turns(self, outs: Sequence[Outcome]) -> Outcome:
        raise NotImplementedError

    def failed_turn(self, outs: Sequence[Outcome]) -> Outcome | None:
        """A conversation with a turn that could not be scored has no honest aggregate: the row fails,
        naming the turn; the turns that did score stay visible in ``evaluation_per_turn``."""
        failed = [(i, o.get(self.error_key)) for i, o in enumerate(outs) if o.get(self.error_key)]
        if not failed:
            return None
        i, cause = failed[0]
        more = f" ({len(failed)} of {len(outs)} turns failed)" if len(failed) > 1 else ""
        result = self.failure(f"turn {i + 1} of {len(outs)}: {cause}{more}", kind=ErrorKind.PARTIAL.value)
        if len(outs) > 1:
            result["evaluation_per_turn"] = per_turn_columns(outs)
        return result


def text_or_none(value: Any) -> str | None:
    """A query or response for a prompt: None stays None, anything else as text."""
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def as_bool(value: Any) -> bool | None:
    """A judge's true/false (a JSON boolean, or the words true/false); None when it is neither."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    return None


def read_flags(obj: Mapping[str, Any], names: Sequence[str]) -> tuple[dict[str, bool], str | None]:
    """The boolean fields ``names`` of a judge's JSON object, or the first problem."""
    flags: dict[str, bool] = {}
    for name in names:
        if name not in obj:
            return {}, f'the field "{name}" is missing'
        flag = as_bool(obj[name])
        if flag is None:
            return {}, f'the field "{name}" is {obj[name]!r}, not true or false'
        flags[name] = flag
    return flags, None
