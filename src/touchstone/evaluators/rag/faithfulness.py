"""``faithfulness``: the share of the response's atomic claims that the retrieved context supports.

One judge call per row splits the response into claims and verifies each against the context
(ragas 0.4.3 makes two: statements, then verdicts). Outcomes, never NaN:

* claims found: ``supported / total`` (label ``claims``);
* the response is a refusal (declines, or says it does not know): 1.0, label ``refusal`` -- it
  asserts nothing the context does not back;
* the response states no fact (a greeting, a question back): 1.0, label ``no_claims``;
* empty context: the call is still made (a refusal is then the faithful answer), and no claim can
  be supported: 0.0 when there are claims, label ``empty_context``;
* an unusable reply after the one repair: a failed row naming what was wrong.

Secondary scores: ``faithfulness_claims`` (claims checked), ``faithfulness_no_claims`` and
``faithfulness_refusal`` (1 or 0); the summary's ``total`` of each counts them over the run.
"""

from __future__ import annotations

from typing import Any

from touchstone.data.kinds import context_documents
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.rag.claims import ClaimReport, check_text, evidence
from touchstone.evaluators.rag.common import CONTEXT, QUERY, RESPONSE, RagJudgeEvaluator, as_query
from touchstone.evaluators.rag.scoring import supported_share
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome


def claims_reason(report: ClaimReport, against: str) -> str:
    """``k of n claims supported by the context`` with the unsupported ones listed."""
    unsupported = [v.claim for v in report.verdicts if not v.supported]
    text = f"{report.supported} of {report.total} claims supported by the {against}."
    if unsupported:
        text += " Unsupported: " + "; ".join(unsupported) + "."
    return text


@register
class FaithfulnessEvaluator(RagJudgeEvaluator):
    """Share of the response's claims supported by the retrieved context (0-1), claims split and
    verified in one judge call; the per-claim verdicts are in ``faithfulness_properties["claims"]``."""

    metric = "faithfulness"
    prefix = "faithfulness"
    score_key = "faithfulness"
    secondary = ("faithfulness_claims", "faithfulness_no_claims", "faithfulness_refusal")
    inputs = (QUERY, CONTEXT, RESPONSE)
    description = "LLM judge: share of the response's claims the context supports (0-1, one call per row)"
    ragas_calls_per_row = "2 (statements, then verdicts)"

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("rag_claims")]

    async def _single(self, **inputs: Any) -> Outcome:
        docs = context_documents(inputs["context"])
        report = await check_text(self.client(), inputs["response"], docs,
                                  question=as_query(inputs.get("query")), text_name="response")
        return self.from_report(report, empty_context=not docs)

    def from_report(self, report: ClaimReport, *, empty_context: bool) -> Outcome:
        """The row's outcome from its verdicts (see the module's list of outcomes)."""
        props: dict[str, Any] = {**report.properties, "claims": evidence(report.verdicts),
                                 "claims_checked": report.total, "supported_claims": report.supported,
                                 "refusal": report.refusal}
        counts = {"faithfulness_claims": report.total, "faithfulness_no_claims": int(report.total == 0),
                  "faithfulness_refusal": int(report.refusal)}
        share = supported_share([v.supported for v in report.verdicts])
        if report.refusal and (share is None or share == 1.0):
            # a refusal that asserts nothing unsupported is faithful, with or without context
            return self.scored(1.0, outcome="refusal", reason="The response declines to answer; it "
                               "asserts nothing the context does not back.", properties=props, **counts)
        if share is None:
            return self.scored(1.0, outcome="no_claims", reason="The response states no factual claim.",
                               properties=props, **counts)
        outcome = "empty_context" if empty_context else "claims"
        return self.scored(share, outcome=outcome, reason=claims_reason(report, "context"),
                           properties=props, **counts)


__all__ = ["FaithfulnessEvaluator", "claims_reason"]
