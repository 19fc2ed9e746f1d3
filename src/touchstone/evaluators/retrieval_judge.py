"""Retrieval quality judged by an LLM (SPEC 3.2): ``retrieval`` (document-list relevance, 1–5) and
``retrieval_score`` (intent coverage, ``1 + 4 * coverage^2``). Both take a query with its context
documents, or a conversation (each assistant turn with its history and retrieved documents)."""

from __future__ import annotations

import re
from typing import Any

from touchstone.data.kinds import context_documents
from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge import JudgeEvaluator, ask, score_schema
from touchstone.evaluators.judge.conversation import Turn
from touchstone.evaluators.judge.prompts import PromptTemplate, format_documents, load_prompt
from touchstone.evaluators.registry import register
from touchstone.judges.parsing import json_objects
from touchstone.scores import Outcome

_QUERY = InputSpec("query", "text", required=False, description="what the user asked")
_CONTEXT = InputSpec("context", "context", required=False, description="the retrieved documents")
_CONVERSATION = InputSpec(
    "conversation", "conversation", required=False, description="a chat: {messages, context?}"
)

_DOC_RATINGS: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "summary": {"type": "string"},
            "suitability": {"type": "string", "enum": ["high", "partial", "none"]},
        },
        "required": ["id", "summary", "suitability"],
        "additionalProperties": False,
    },
}


@register
class RetrievalEvaluator(JudgeEvaluator):
    """How well the retrieved documents serve the query (SPEC 3.2): the judge summarises each
    document, works out the query's intent (using the history when ambiguous), rates each document's
    suitability by id, then gives 1 (none relevant) to 5 (one document or a combination is ideal)."""

    metric = "retrieval"
    prefix = "retrieval"
    score_key = "retrieval"
    inputs = (_QUERY, _CONTEXT, _CONVERSATION)
    input_modes = (("query", "context"), ("conversation",))
    description = "LLM judge: do the retrieved documents serve the query (1-5)"
    messages_input = "as_is"

    def __init__(self, model_config: Any, *, threshold: float | None = 3, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("retrieval")]

    async def _rate(self, history: str | None, query: str | None, docs: list[dict[str, Any]]) -> Outcome:
        schema = score_schema(
            self.scale,
            {"documents": _DOC_RATINGS, "intent": {"type": "string"}, "thought_chain": {"type": "string"}},
        )
        j = await self._judge(
            load_prompt("retrieval"),
            {"history": history, "query": query, "documents": format_documents(docs)},
            schema=schema,
        )
        data = j.data or {}
        j.properties["documents"] = data.get("documents") if isinstance(data.get("documents"), list) else None
        j.properties["intent"] = data.get("intent") if isinstance(data.get("intent"), str) else None
        # the SDK's key for the judge's step-by-step analysis (a free-text reply may lack it)
        thought = data.get("thought_chain")
        j.properties["thought_chain"] = thought if isinstance(thought, str) else ""
        return self.judged(j)

    async def _single(self, **inputs: Any) -> Outcome:
        return await self._rate(None, inputs["query"], context_documents(inputs["context"]))

    async def _turn(self, turn: Turn) -> Outcome:
        return await self._rate(turn.history_text, turn.query, turn.documents)


_INTENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "intents": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "intent": {"type": "string"},
                    "verdict": {"type": "string", "enum": ["Yes", "No"]},
                    "document_ids": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["intent", "verdict", "document_ids"],
                "additionalProperties": False,
            },
        },
        "reason": {"type": "string"},
    },
    "required": ["intents", "reason"],
    "additionalProperties": False,
}


def coverage_score(coverage: float) -> float:
    """``retrieval_score = 1 + 4 * coverage^2`` (squared to penalise misses)."""
    return 1 + 4 * coverage**2


def read_intents(text: str) -> tuple[list[dict[str, Any]] | None, str, str | None]:
    """``(intents, reason, error)`` from a reply: each intent ``{intent, verdict: "Yes"|"No",
    document_ids}``. Verdicts written as ``"Yes, documents [a, b]"`` are accepted; anything else that
    is not clearly Yes or No makes the reply unusable."""
    if not text or not text.strip():
        return None, "", "the reply is empty"
    objs = [o for o, _, _ in json_objects(text) if isinstance(o, dict) and "intents" in o]
    if not objs:
        return None, "", 'the reply holds no JSON object with an "intents" list'
    if len(objs) > 1 and any(o != objs[0] for o in objs[1:]):
        return None, "", "ambiguous: the reply holds several different intent lists"
    obj = objs[0]
    raw = obj.get("intents")
    if not isinstance(raw, list) or not raw:
        return None, "", 'the "intents" field is not a non-empty list'
    intents = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            return None, "", f"intent {i + 1} is not an object"
        verdict = str(item.get("verdict", "")).strip()
        ids = item.get("document_ids") or []
        m = re.fullmatch(r"(yes|no)\b[\s,.:;-]*(?:documents?\s*)?(.*)", verdict, re.IGNORECASE | re.DOTALL)
        if not m:
            return None, "", f"intent {i + 1} has no Yes/No verdict (got {verdict!r})"
        answered = m.group(1).lower() == "yes"
        if answered and not ids and m.group(2):
            ids = [s for s in re.split(r"[\s,\[\]\"']+", m.group(2)) if s]
        if not isinstance(ids, list):
            return None, "", f'intent {i + 1}: "document_ids" is not a list'
        intents.append({"intent": str(item.get("intent", "")), "verdict": "Yes" if answered else "No",
                        "document_ids": [str(x) for x in ids] if answered else []})
    reason = obj.get("reason") if isinstance(obj.get("reason"), str) else ""
    return intents, str(reason), None


@register
class RetrievalScoreEvaluator(JudgeEvaluator):
    """Intent coverage of the retrieved documents (SPEC 3.2): the judge splits the question (read in
    light of the history) into intents and says for each whether it or its answer is in, or can be
    inferred from, the documents ("No" or "Yes" with document ids). ``retrieval_coverage`` is the share
    of intents answered Yes, and ``retrieval_score = 1 + 4 * coverage^2`` (float 1–5). The per-intent
    verdicts are in the reason and in ``retrieval_score_properties``."""

    metric = "retrieval_score"
    prefix = "retrieval_score"
    score_key = "retrieval_score"
    secondary = ("retrieval_coverage",)
    inputs = (_QUERY, _CONTEXT, _CONVERSATION)
    input_modes = (("query", "context"), ("conversation",))
    description = "LLM judge: share of the query's intents the documents cover, 1 + 4*coverage^2 (1-5)"
    value_range = "1-5 (float)"

    def __init__(self, model_config: Any, *, threshold: float | None = 3, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("retrieval_score")]

    def options(self) -> dict[str, Any]:
        opts = super().options()
        opts["score_mode"] = "verdicts"  # computed from per-intent verdicts; no sampled score to weight
        return opts

    async def _cover(self, history: str | None, query: str | None, docs: list[dict[str, Any]]) -> Outcome:
        prompt = load_prompt("retrieval_score")

        def read(text: str) -> tuple[tuple[list[dict[str, Any]], str] | None, str | None]:
            found, why, error = read_intents(text)
            return (None, error) if error is not None or found is None else ((found, why), None)

        answer = await ask(
            self.client(), prompt, {"history": history, "query": query, "documents": format_documents(docs)},
            read, schema=_INTENTS_SCHEMA, what="intent verdicts",
        )
        intents, reason = answer.value
        assert intents is not None
        yes = sum(1 for it in intents if it["verdict"] == "Yes")
        coverage = yes / len(intents)
        verdicts = "; ".join(
            f"{k + 1}. {it['intent']}: "
            + (f"Yes, documents {it['document_ids']}" if it["verdict"] == "Yes" else "No")
            for k, it in enumerate(intents)
        )
        full_reason = f"{yes} of {len(intents)} intents covered. {verdicts}." + (
            f" {reason}" if reason else ""
        )
        props = {**answer.properties, "score_mode": "verdicts", "intents": intents}
        return self.result(round(coverage_score(coverage), 6), reason=full_reason, properties=props,
                           retrieval_coverage=round(coverage, 6))

    async def _single(self, **inputs: Any) -> Outcome:
        return await self._cover(None, inputs["query"], context_documents(inputs["context"]))

    async def _turn(self, turn: Turn) -> Outcome:
        return await self._cover(turn.history_text, turn.query, turn.documents)


__all__ = ["RetrievalEvaluator", "RetrievalScoreEvaluator", "coverage_score", "read_intents"]
