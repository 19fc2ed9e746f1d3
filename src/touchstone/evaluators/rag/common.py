"""What the RAG metrics share: 0-1 scores judged from verdicts (not sampled on a scale), the
claim-level evidence in ``<m>_properties``, an outcome label on the main Score, claim counts as
secondary scores (the summary's ``total`` is then the claims checked over the run)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar

from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge import JudgeEvaluator
from touchstone.scores import Outcome

QUERY = InputSpec("query", "text", required=False, description="the user's question")
CONTEXT = InputSpec("context", "context", description="the retrieved documents (text or a list)")
RESPONSE = InputSpec("response", "text", description="the application's answer")
REFERENCE = InputSpec("ground_truth", "text", description="the reference (ground-truth) answer")


class RagJudgeEvaluator(JudgeEvaluator):
    """Base of the judged RAG metrics: a 0-1 score computed from the judge's verdicts, threshold 0.5
    by default, no ``gpt_`` alias, no conversations. ``calls_per_row`` is the number of judge calls a
    row takes (the dry run counts them by running the metric; this is the documented figure)."""

    default_threshold: ClassVar[float | None] = 0.5
    value_range = "0-1"
    gpt_alias = False
    aggregators: ClassVar[tuple[str, ...]] = ("mean", "pass_rate", "total")
    calls_per_row: ClassVar[int] = 1
    ragas_calls_per_row: ClassVar[str] = ""
    """ragas 0.4.3's judge calls per row for the same metric (the anchor), as documentation."""

    def __init__(self, model_config: Any, *, threshold: float | None = None, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)

    def options(self) -> dict[str, Any]:
        opts = super().options()
        opts["score_mode"] = "verdicts"  # computed from verdicts; there is no sampled score to weight
        return opts

    def scored(self, value: float, *, outcome: str, reason: str, properties: dict[str, Any],
               **extra: Any) -> Outcome:
        """A scored row: the value, the outcome (``claims``, ``no_claims``,
        ``refusal``, ``empty_context``...) as the main Score's label and in the properties."""
        properties = {**properties, "outcome": outcome}
        out = self.result(float(value), reason=reason, properties=properties, **extra)
        out.scores[0] = replace(out.scores[0], label=outcome)
        return out


def as_query(value: Any) -> str | None:
    return value if isinstance(value, str) and value.strip() else None


__all__ = ["CONTEXT", "QUERY", "REFERENCE", "RESPONSE", "RagJudgeEvaluator", "as_query"]
