"""``context_entity_recall``: the share of the reference answer's distinct entities that the
retrieved context mentions, ``|E_ref ∩ E_ctx| / |E_ref|``.

One judge call lists the reference's entities and says for each whether a document mentions it
(ragas 0.4.3 makes two calls, extracting the entities of the reference and of the context, and
matches them as exact strings). Outcomes, never NaN: empty context: 0.0 without a call (label
``empty_context``); a reference naming no entity: a failed row (kind ``input``; ragas gives 0.0).
"""

from __future__ import annotations

from typing import Any

from touchstone.data.kinds import context_documents
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.rag.claims import check_text
from touchstone.evaluators.rag.common import CONTEXT, QUERY, REFERENCE, RagJudgeEvaluator, as_query
from touchstone.evaluators.rag.scoring import entity_recall
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

NO_ENTITIES = "the reference answer names no entity to look for in the context"


@register
class ContextEntityRecallEvaluator(RagJudgeEvaluator):
    """Share of the reference answer's entities mentioned in the retrieved context (0-1), one judge
    call; per-entity verdicts in ``context_entity_recall_properties["entities"]``."""

    metric = "context_entity_recall"
    prefix = "context_entity_recall"
    score_key = "context_entity_recall"
    secondary = ("context_entity_recall_entities",)
    inputs = (QUERY, CONTEXT, REFERENCE)
    description = "LLM judge: share of the reference's entities the context mentions (0-1, one call)"
    ragas_calls_per_row = "2 (entities of the reference, entities of the context)"

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("rag_entities")]

    async def _single(self, **inputs: Any) -> Outcome:
        docs = context_documents(inputs["context"])
        if not docs:
            return self.scored(0.0, outcome="empty_context", properties={"entities": []},
                               reason="No context was retrieved.")
        report = await check_text(self.client(), inputs["ground_truth"], docs,
                                  question=as_query(inputs.get("query")), text_name="reference answer",
                                  prompt=load_prompt("rag_entities"))
        names = [v.claim for v in report.verdicts]
        score = entity_recall(names, [v.claim for v in report.verdicts if v.supported])
        if score is None:
            return self.failure(NO_ENTITIES, kind="input")
        entities = [{"entity": v.claim, "verdict": "present" if v.supported else "absent",
                     "document": v.document, "reason": v.reason} for v in report.verdicts]
        missing = sorted({v.claim for v in report.verdicts if not v.supported})
        reason = f"{len(set(names)) - len(missing)} of {len(set(names))} entities found in the context" + (
            f"; missing: {', '.join(missing)}." if missing else ".")
        props = {**report.properties, "entities": entities}
        return self.scored(score, outcome="entities", reason=reason, properties=props,
                           context_entity_recall_entities=len(set(names)))


__all__ = ["ContextEntityRecallEvaluator"]
