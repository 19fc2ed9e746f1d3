"""``context_relevance``: is the retrieved context relevant to the question?

This follows ragas 0.4.3's ``ContextRelevance`` (the NVIDIA two-judge metric, the ragas metric of
that name), not a per-sentence share: two differently worded prompts each rate the context 0 (nothing
relevant), 1 (partly relevant) or 2 (relevant), and

    context_relevance = mean over the ratings obtained of (rating / 2)

so 0, 0.25, 0.5, 0.75 or 1 with sampled ratings (the log-probability expectation gives values in
between with ``score_mode="logprobs"``). When one rating cannot be read after the one repair, the
other alone gives the score (as ragas, which averages what is not NaN); when neither can, the row
fails with both causes. ``judges=1`` asks the first prompt only (one call per row instead of two).

Outcomes, never NaN, without a judge call (ragas' own edge cases, label of the main Score):

* ``empty_question`` / ``empty_context``: 0.0;
* ``context_in_question``: 0.0 when the context (documents joined by newlines) equals the question
  or is contained in it -- such a context adds nothing to the question;
* ``rated``: the two-rating mean; ``one_rating`` when only one rating could be read.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, ClassVar

from touchstone.data.kinds import context_documents
from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge import Judgement, JudgeReplyError
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.judge.reply import Scale
from touchstone.evaluators.rag.common import CONTEXT, RagJudgeEvaluator
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

QUESTION = InputSpec("query", "text", description="the user's question")
PROMPTS = ("rag_context_relevance", "rag_context_relevance_second")
RATING_SCALE = Scale(0, 2)


def rating_mean(ratings: Sequence[float | None]) -> float | None:
    """``mean(r / 2)`` over the ratings that were obtained (None: not obtained); None when there is
    none. Equal to ragas' ``_average_scores(r1 / 2, r2 / 2)`` with NaN for a missing rating."""
    got = [r / 2.0 for r in ratings if r is not None]
    if not got:
        return None
    return sum(got) / len(got)


def context_joined(context: Any) -> str:
    """The documents' contents joined by newlines (ragas' ``"\\n".join(retrieved_contexts)``)."""
    return "\n".join(str(d.get("content", "")) for d in context_documents(context))


@register
class ContextRelevanceEvaluator(RagJudgeEvaluator):
    """How relevant the retrieved context is to the question (ragas' ``context_relevance``): the
    mean of two 0-2 judge ratings, divided by 2. ``judges=1`` uses one rating (one call per row)."""

    metric = "context_relevance"
    prefix = "context_relevance"
    score_key = "context_relevance"
    inputs = (QUESTION, CONTEXT)
    description = "LLM judge: relevance of the retrieved context to the question (0-1, two 0-2 ratings)"
    ragas_calls_per_row = "2 (two judge prompts)"
    calls_per_row: ClassVar[int] = 2

    def __init__(self, model_config: Any, *, threshold: float | None = None, judges: int = 2,
                 **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)
        if judges not in (1, 2):
            raise ConfigurationError(f"judges must be 1 or 2, got {judges!r}")
        self.judges = judges

    def options(self) -> dict[str, Any]:
        return {**super().options(), "score_mode": self.score_mode, "judges": self.judges}

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt(name) for name in PROMPTS[: self.judges]]

    async def _rate(self, prompt: PromptTemplate, data: dict[str, str | None]) -> Judgement | JudgeReplyError:
        try:
            return await self._judge(prompt, data, scale=RATING_SCALE)
        except JudgeReplyError as exc:
            return exc

    async def _single(self, **inputs: Any) -> Outcome:
        question = inputs["query"].strip()
        context = context_joined(inputs["context"]).strip()
        early = self._edge_case(question, context)
        if early is not None:
            return early
        data: dict[str, str | None] = {"question": inputs["query"], "context": context}
        got = await asyncio.gather(*(self._rate(p, data) for p in self.prompts()))
        ratings = [g.score if isinstance(g, Judgement) else None for g in got]
        value = rating_mean(ratings)
        if value is None:
            causes = "; ".join(str(g) for g in got)
            raise JudgeReplyError(f"no rating could be read from either judge prompt: {causes}")
        judgements = [g for g in got if isinstance(g, Judgement)]
        props: dict[str, Any] = {**judgements[0].properties, "ratings": ratings,
                                 "reasons": [g.reason if isinstance(g, Judgement) else str(g) for g in got]}
        tokens = ("prompt_tokens", "completion_tokens", "total_tokens")
        for key in tokens:  # the row's usage is both calls'
            props[key] = sum(int(j.properties.get(key, 0) or 0) for j in judgements)
        outcome = "rated" if len(judgements) == len(got) else "one_rating"
        reason = " ".join(f"Rating {r:g}/2: {j.reason}" for r, j in
                          zip([r for r in ratings if r is not None], judgements, strict=True))
        return self.scored(value, outcome=outcome, reason=reason, properties=props)

    def _edge_case(self, question: str, context: str) -> Outcome | None:
        """ragas' cases scored 0 without asking the judge."""
        if not question:
            return self.scored(0.0, outcome="empty_question", properties={},
                               reason="The question is empty: no context can be relevant to it.")
        if not context:
            return self.scored(0.0, outcome="empty_context", properties={},
                               reason="No context was retrieved.")
        if context in question:
            return self.scored(0.0, outcome="context_in_question", properties={},
                               reason="The context only repeats the question: it adds no information.")
        return None


__all__ = ["PROMPTS", "ContextRelevanceEvaluator", "context_joined", "rating_mean"]
