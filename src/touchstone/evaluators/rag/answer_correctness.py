"""``answer_correctness``: ``(w_f · F_β + w_s · similarity) / (w_f + w_s)`` -- the claim-level F-beta
of the response against the reference answer blended with ``answer_similarity``; ragas' defaults:
weights ``[0.75, 0.25]``, ``beta = 1.0``.

F-beta's counts come from one judge call that splits both texts into claims: TP = response claims
the reference supports, FP = response claims it does not, FN = reference claims the response leaves
out (ragas 0.4.3 makes three calls: the two statement lists, then the classification; plus two
embedding requests). When neither text has a claim, F-beta is 1.0 (as ragas). With ``weights[1] ==
0`` no embedding is computed. Outcomes, never NaN; a reply unusable after the one repair fails the row.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from touchstone.errors import ConfigurationError
from touchstone.evaluators.judge import ask, model_reader
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.rag.answer_similarity import AnswerSimilarityEvaluator
from touchstone.evaluators.rag.claims import strict_schema
from touchstone.evaluators.rag.common import QUERY, REFERENCE, RESPONSE, RagJudgeEvaluator, as_query
from touchstone.evaluators.rag.scoring import claim_fbeta, weighted_blend
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome


class PairedClaim(BaseModel):
    model_config = ConfigDict(extra="ignore")

    claim: str
    reason: str = ""
    verdict: Literal["supported", "unsupported"]


class CorrectnessReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    response_claims: list[PairedClaim]
    reference_claims: list[PairedClaim]


CORRECTNESS_SCHEMA = strict_schema(CorrectnessReply)


def check_weights(weights: Sequence[float], beta: float) -> tuple[float, float]:
    """``weights`` as two non-negative numbers, not both 0; ``beta`` positive."""
    if len(weights) != 2:
        raise ConfigurationError("answer_correctness weights: two numbers, for F-beta and for similarity")
    w = (float(weights[0]), float(weights[1]))
    if min(w) < 0 or sum(w) == 0:
        raise ConfigurationError("answer_correctness weights must be non-negative and not both 0")
    if not beta > 0:
        raise ConfigurationError("answer_correctness beta must be positive")
    return w


@register
class AnswerCorrectnessEvaluator(RagJudgeEvaluator):
    """Claim-level F-beta of the response against the reference answer, blended with their embedding
    similarity (0-1). ``embedding_model`` / ``embedding_config`` choose the embedding provider (as
    ``answer_similarity``'s ``model`` / ``model_config``; default: the local MiniLM model)."""

    metric = "answer_correctness"
    prefix = "answer_correctness"
    score_key = "answer_correctness"
    secondary = ("answer_correctness_fbeta", "answer_correctness_similarity", "answer_correctness_claims")
    inputs = (QUERY, RESPONSE, REFERENCE)
    description = "LLM judge: claim F-beta vs the reference blended with embedding similarity (0-1, one call)"
    ragas_calls_per_row = "3 (two statement lists, classification) + 2 embedding requests"
    calls_per_row: ClassVar[int] = 1

    def __init__(
        self,
        model_config: Any,
        *,
        threshold: float | None = None,
        weights: Sequence[float] = (0.75, 0.25),
        beta: float = 1.0,
        embedding_model: str | os.PathLike[str] | None = None,
        embedding_config: Any = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)
        self.weights = check_weights(weights, beta)
        self.beta = float(beta)
        self.similarity: AnswerSimilarityEvaluator | None = None
        if self.weights[1] > 0:
            self.similarity = AnswerSimilarityEvaluator(embedding_model, model_config=embedding_config)

    def options(self) -> dict[str, Any]:
        opts = {**super().options(), "weights": list(self.weights), "beta": self.beta}
        if self.similarity is not None:
            opts["embeddings"] = self.similarity.options()
        return opts

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("rag_answer_correctness")]

    async def _single(self, **inputs: Any) -> Outcome:
        response, reference = inputs["response"], inputs["ground_truth"]
        answer = await ask(self.client(), load_prompt("rag_answer_correctness"),
                           {"question": as_query(inputs.get("query")), "response": response,
                            "ground_truth": reference},
                           model_reader(CorrectnessReply), schema=CORRECTNESS_SCHEMA, what="claim verdicts")
        reply = answer.value
        assert isinstance(reply, CorrectnessReply)
        mine = [c for c in reply.response_claims if c.claim.strip()]
        theirs = [c for c in reply.reference_claims if c.claim.strip()]
        f = claim_fbeta([c.verdict == "supported" for c in mine], [c.verdict == "supported" for c in theirs],
                        self.beta)
        sim = await self.similarity.similarity(response, reference) if self.similarity is not None else 0.0
        score = weighted_blend([f, sim], self.weights)
        tp = sum(1 for c in mine if c.verdict == "supported")
        fn = sum(1 for c in theirs if c.verdict != "supported")
        props = {
            **answer.properties,
            "response_claims": [c.model_dump() for c in mine],
            "reference_claims": [c.model_dump() for c in theirs],
            "tp": tp, "fp": len(mine) - tp, "fn": fn, "weights": list(self.weights), "beta": self.beta,
        }
        reason = (f"F{self.beta:g} {f:.3f} (TP {tp}, FP {len(mine) - tp}, FN {fn}), similarity {sim:.3f}, "
                  f"weights {self.weights[0]:g}/{self.weights[1]:g}.")
        return self.scored(score, outcome="claims" if mine or theirs else "no_claims", reason=reason,
                           properties=props, answer_correctness_fbeta=f, answer_correctness_similarity=sim,
                           answer_correctness_claims=len(mine) + len(theirs))


__all__ = ["AnswerCorrectnessEvaluator", "check_weights"]
