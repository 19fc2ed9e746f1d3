"""``context_recall``: the share of the reference answer's claims that can be attributed to the
retrieved context (did retrieval bring what the right answer needs?).

One judge call per row splits the reference into claims and verifies each against the context (as
many calls as ragas 0.4.3, which classifies the reference's sentences in one call). Outcomes, never
NaN:

* claims found: ``attributed / total`` (label ``claims``);
* empty context: 0.0 without a judge call (label ``empty_context``): nothing was retrieved;
* the reference states no claim: a failed row (kind ``input``) saying so -- recall of nothing is
  undefined;
* an unusable reply after the one repair: a failed row naming what was wrong.
"""

from __future__ import annotations

from typing import Any

from touchstone.data.kinds import context_documents
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.rag.claims import check_text, evidence
from touchstone.evaluators.rag.common import CONTEXT, QUERY, REFERENCE, RagJudgeEvaluator, as_query
from touchstone.evaluators.rag.faithfulness import claims_reason
from touchstone.evaluators.rag.scoring import supported_share
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

NO_REFERENCE_CLAIMS = "the reference answer states no claim to look for in the context"


@register
class ContextRecallEvaluator(RagJudgeEvaluator):
    """Share of the reference answer's claims attributable to the retrieved context (0-1), claims
    split and verified in one judge call; verdicts in ``context_recall_properties["claims"]``."""

    metric = "context_recall"
    prefix = "context_recall"
    score_key = "context_recall"
    secondary = ("context_recall_claims",)
    inputs = (QUERY, CONTEXT, REFERENCE)
    description = "LLM judge: share of the reference answer's claims found in the context (0-1, one call)"
    ragas_calls_per_row = "1 (sentence classifications)"

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("rag_claims")]

    async def _single(self, **inputs: Any) -> Outcome:
        docs = context_documents(inputs["context"])
        if not docs or not any(str(d.get("content", "")).strip() for d in docs):
            return self.scored(0.0, outcome="empty_context", properties={"claims": []},
                               reason="No context was retrieved: none of the reference is recalled.")
        report = await check_text(self.client(), inputs["ground_truth"], docs,
                                  question=as_query(inputs.get("query")), text_name="reference answer")
        share = supported_share([v.supported for v in report.verdicts])
        if share is None:
            return self.failure(NO_REFERENCE_CLAIMS, kind="input")
        props = {**report.properties, "claims": evidence(report.verdicts), "claims_checked": report.total,
                 "supported_claims": report.supported}
        return self.scored(share, outcome="claims", reason=claims_reason(report, "context"),
                           properties=props, context_recall_claims=report.total)


__all__ = ["ContextRecallEvaluator"]
