"""A judged metric that is only a prompt, as a value: :class:`PromptMetric`.

Most judged metrics are one prompt, a scale and the inputs they read: they need no class. A
:class:`PromptMetric` says all of that (name, prompt template, scale, inputs, default threshold,
direction, the compatible SDK's output keys); :class:`PromptMetricEvaluator` scores any of them.
The built-in ones are entries of the table in :mod:`touchstone.evaluators.prompt_metrics`, each bound
to the class name the compatible SDK users import (``class FluencyEvaluator(PromptMetricEvaluator):
definition = FLUENCY``); a user's own is one value passed to
:func:`touchstone.evaluators.registry.register`, and then runs by name like any other metric.

How a row is judged: an agent's messages are checked and rendered (an unfinished agent is not
applicable), an input listed in ``skip_when_empty`` that is empty makes the row not applicable, the
inputs the prompt takes are rendered by kind (:func:`~.prompt_inputs.prompt_text`) and the judge
scores the row on the scale with one call (:func:`~.primitive.judge`). A metric that takes
``conversation`` judges each turn with its history (``conversation_mode="history"``) through the
same prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from touchstone.evaluators.agent.messages import INTERMEDIATE, is_intermediate
from touchstone.evaluators.base import InputSpec, Tier
from touchstone.evaluators.judge.conversation import Turn
from touchstone.evaluators.judge.metric import JudgeEvaluator, as_given
from touchstone.evaluators.judge.model_config import no_judge_error
from touchstone.evaluators.judge.prompt_inputs import check_messages, is_empty, prompt_text
from touchstone.evaluators.judge.prompts import PromptTemplate, format_documents, load_prompt
from touchstone.evaluators.judge.reply import Scale
from touchstone.scores import Outcome

FIVE_POINTS = Scale(1, 5)
"""The 1-5 rating scale of most judged metrics."""


@dataclass(frozen=True)
class PromptMetric:
    """One prompt-only judged metric. ``prompt`` is the name of a packaged prompt
    (``touchstone/prompts/<name>.yaml``) or a :class:`PromptTemplate`; ``inputs`` are the row's
    inputs it reads (their kinds say how the prompt shows them); ``threshold`` is the default pass
    mark on ``scale``. ``prefix`` and ``score_key`` are the compatible SDK's output names (default:
    ``name``); ``gpt_alias`` adds ``gpt_<key>``. ``messages_input`` takes the SDK's bare
    ``messages=[...]`` as a conversation (``"checked"`` or ``"as_is"``). An input named in
    ``skip_when_empty`` that is empty makes the row not applicable, with ``skip_reason``.

    The value reads like an evaluator class where the registry and the planner read one (its
    ``metric``, ``inputs``, ``tier``...), and calling it builds the evaluator."""

    name: str
    prompt: str | PromptTemplate
    inputs: tuple[InputSpec, ...]
    description: str
    input_modes: tuple[tuple[str, ...], ...] = ()
    scale: Scale = FIVE_POINTS
    threshold: float | None = 3.0
    higher_is_better: bool = True
    tier: Tier = "medium"
    prefix: str = ""
    score_key: str = ""
    gpt_alias: bool = True
    messages_input: str | None = None
    skip_when_empty: tuple[str, ...] = ()
    skip_reason: str = ""

    # ------------------------------------------------------------ read like an evaluator class
    needs_judge: ClassVar[bool] = True
    is_async: ClassVar[bool] = True
    secondary: ClassVar[tuple[str, ...]] = ()
    lower_is_better: ClassVar[frozenset[str]] = frozenset()
    aggregators: ClassVar[tuple[str, ...]] = ("mean", "pass_rate")

    @property
    def metric(self) -> str:
        return self.name

    @property
    def default_threshold(self) -> float | None:
        return None if self.threshold is None else float(self.threshold)

    @property
    def value_range(self) -> str:
        return str(self.scale)

    def template(self) -> PromptTemplate:
        """The prompt template (a packaged prompt is loaded once, then cached)."""
        return load_prompt(self.prompt) if isinstance(self.prompt, str) else self.prompt

    def option_names(self) -> tuple[str, ...]:
        """The keyword options its evaluator takes."""
        return PromptMetricEvaluator.option_names()

    def from_options(self, *, model_config: Any = None, threshold: float | None = None,
                     score_mode: str | None = None, conversation_aggregation: str | None = None,
                     **_: Any) -> PromptMetricEvaluator:
        """The registry's factory (CLI), as a judge metric class's: a clear error when no judge is
        configured; the run's other shared options are not this metric's."""
        if model_config is None:
            raise no_judge_error(self.name)
        return self(model_config, threshold=threshold, score_mode=score_mode or "sampled",
                    conversation_aggregation=conversation_aggregation)

    def __call__(self, model_config: Any, **options: Any) -> PromptMetricEvaluator:
        """The evaluator of this metric."""
        return PromptMetricEvaluator(model_config, definition=self, **options)


_DECLARATIONS = ("metric", "prefix", "score_key", "inputs", "input_modes", "description", "scale",
                 "value_range", "default_threshold", "higher_is_better", "tier", "gpt_alias",
                 "messages_input")


def _declarations(definition: PromptMetric) -> dict[str, Any]:
    """The evaluator declarations a :class:`PromptMetric` stands for."""
    values = {name: getattr(definition, name) for name in _DECLARATIONS}
    values["prefix"] = definition.prefix or definition.name
    values["score_key"] = definition.score_key or definition.name
    return values


class PromptMetricEvaluator(JudgeEvaluator):
    """Scores any :class:`PromptMetric`: bound in a subclass (``definition = FLUENCY``, the compatible
    SDK's class names) or given to the constructor (``PromptMetricEvaluator(cfg, definition=value)``,
    what calling the value does)."""

    definition: ClassVar[PromptMetric | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        definition = cls.__dict__.get("definition")
        if definition is not None:
            for name, value in _declarations(definition).items():
                setattr(cls, name, value)

    def __init__(self, model_config: Any, *, definition: PromptMetric | None = None,
                 threshold: float | None = None, **kwargs: Any) -> None:
        if definition is not None:
            # an instance of a metric defined as a value only: its declarations on the instance
            self.definition = definition  # type: ignore[misc]
            for name, value in _declarations(definition).items():
                setattr(self, name, value)
        if self.definition is None:
            raise TypeError("PromptMetricEvaluator needs a PromptMetric: pass definition=...")
        if threshold is None:
            # as the user would write it (``3``, not ``3.0``): the SDK reports it as given
            threshold = as_given(self.definition.threshold)
        super().__init__(model_config, threshold=threshold, **kwargs)

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        return tuple(n for n in super().option_names() if n != "definition")

    @property
    def _definition(self) -> PromptMetric:
        assert self.definition is not None  # checked when built
        return self.definition

    def prompts(self) -> list[PromptTemplate]:
        return [self._definition.template()]

    async def _single(self, **inputs: Any) -> Outcome:
        d = self._definition
        kinds = {spec.name: spec.kind for spec in d.inputs}
        if "messages" in kinds.values():
            check_messages(self.metric, inputs)
            if kinds.get("response") == "messages" and is_intermediate(inputs["response"]):
                return self.not_applicable(INTERMEDIATE)
        if any(is_empty(kinds.get(name, "text"), inputs.get(name)) for name in d.skip_when_empty):
            return self.not_applicable(d.skip_reason)
        prompt = d.template()
        data = {
            name: prompt_text(kind, inputs.get(name))
            for name, kind in kinds.items()
            if name in prompt.inputs
        }
        return self.judged(await self._judge(prompt, data))

    async def _turn(self, turn: Turn) -> Outcome:
        if "conversation" not in {spec.name for spec in self._definition.inputs}:
            return await super()._turn(turn)
        prompt = self._definition.template()
        given: Mapping[str, str | None] = {
            "history": turn.history_text,
            "query": turn.query,
            "response": turn.response,
            "ground_truth": turn.ground_truth,
            "documents": format_documents(turn.documents) if turn.documents else None,
        }
        return self.judged(await self._judge(prompt, {k: v for k, v in given.items() if k in prompt.inputs}))
