"""Judge metrics for texts written from a source (summaries, digests, answers over a document):
``completeness`` (does the response keep the source's key points) and ``conciseness`` (does it say
it without padding). Both score 1-5 with one judge call per row, pass threshold 3, and return the
same keys as the other 1-5 judge metrics (``m``, ``gpt_m``, ``m_score``, ``m_result``, ``m_reason``...).
"""

from __future__ import annotations

from typing import Any, ClassVar

from touchstone.evaluators.base import InputSpec, Outputs
from touchstone.evaluators.judging import JudgeEvaluator
from touchstone.evaluators.prompting import PromptTemplate, load_prompt
from touchstone.evaluators.quality import context_block
from touchstone.evaluators.registry import register

_SOURCE = InputSpec("context", "context", description="the source the response was written from")
_RESPONSE = InputSpec("response", "text", description="the summary or answer under evaluation")
_QUERY = InputSpec("query", "text", required=False, description="the question or instruction, if any")


def _blank(value: Any) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


@register
class CompletenessEvaluator(JudgeEvaluator):
    """How many of the source's key points the response keeps (1-5), judged point by point against
    the source given as ``context``; with a ``query``, the points that matter for it."""

    metric = "completeness"
    prefix = "completeness"
    score_key = "completeness"
    inputs = (_QUERY, _SOURCE, _RESPONSE)
    description = "LLM judge: share of the source's key points the response keeps (1-5)"
    prompt_name: ClassVar[str] = "completeness"

    def __init__(self, model_config: Any, *, threshold: float | None = 3, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt(self.prompt_name)]

    async def _single(self, **inputs: Any) -> Outputs:
        if _blank(inputs.get("response")) or not inputs.get("context"):
            return self.not_applicable("the source (context) or the response is empty")
        j = await self._judge(
            load_prompt(self.prompt_name),
            {"query": inputs.get("query"), "context": context_block(inputs["context"]),
             "response": inputs["response"]},
        )
        return self.judged(j)


@register
class ConcisenessEvaluator(JudgeEvaluator):
    """Whether the response says what it has to without padding, repetition or digressions (1-5).
    A short judgement on the response alone: tier ``low`` (a small judge model does it well)."""

    metric = "conciseness"
    prefix = "conciseness"
    score_key = "conciseness"
    inputs = (_QUERY, _RESPONSE)
    description = "LLM judge: no padding, repetition or digression in the response (1-5)"
    tier = "low"  # type: ignore[assignment]
    prompt_name: ClassVar[str] = "conciseness"

    def __init__(self, model_config: Any, *, threshold: float | None = 3, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt(self.prompt_name)]

    async def _single(self, **inputs: Any) -> Outputs:
        if _blank(inputs.get("response")):
            return self.not_applicable("the response is empty")
        j = await self._judge(
            load_prompt(self.prompt_name), {"query": inputs.get("query"), "response": inputs["response"]}
        )
        return self.judged(j)
