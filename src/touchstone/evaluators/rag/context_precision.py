"""``context_precision``: rank-weighted precision of the retrieved chunks that were useful for the
answer -- ``Σ_k precision@k · v_k / Σ_k v_k`` (``v_k`` = 1 when the chunk at rank ``k`` is useful).

Usefulness is judged for the reference answer (``ground_truth``), or, without one, for the response
(ragas' ``LLMContextPrecisionWithoutReference``); ``use_reference=False`` forces the second. One
judge call per row judges every chunk (ragas 0.4.3 makes one call per chunk). Outcomes, never NaN:
no chunk useful, or no context retrieved (no call): 0.0 (as ragas); a reply that leaves a rank without
a verdict gets the one repair, then the row fails naming the ranks still missing.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from touchstone.data.kinds import context_documents
from touchstone.errors import ConfigurationError
from touchstone.evaluators.base import InputSpec
from touchstone.evaluators.judge import ask, model_reader
from touchstone.evaluators.judge.prompts import PromptTemplate, format_documents, load_prompt
from touchstone.evaluators.rag.claims import strict_schema
from touchstone.evaluators.rag.common import CONTEXT, RagJudgeEvaluator, as_query
from touchstone.evaluators.rag.scoring import average_precision
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome


class ChunkVerdict(BaseModel):
    """One chunk's verdict, by rank (1-based)."""

    model_config = ConfigDict(extra="ignore")

    rank: int
    reason: str = ""
    verdict: Literal["useful", "not_useful"]


class ChunkVerdictsReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    documents: list[ChunkVerdict]


CHUNK_SCHEMA = strict_schema(ChunkVerdictsReply)


def chunk_schema(count: int) -> dict[str, Any]:
    """The reply's schema for ``count`` documents: exactly that many verdicts."""
    schema = strict_schema(ChunkVerdictsReply)
    schema["properties"]["documents"].update(minItems=count, maxItems=count)
    return schema


def chunk_reader(count: int) -> Any:
    """A reader requiring exactly one verdict for every rank 1..``count``."""
    read_model = model_reader(ChunkVerdictsReply)

    def read(text: str) -> tuple[dict[int, ChunkVerdict] | None, str | None]:
        value, error = read_model(text)
        if error is not None:
            return None, error
        assert isinstance(value, ChunkVerdictsReply)
        by_rank: dict[int, ChunkVerdict] = {}
        for item in value.documents:
            if 1 <= item.rank <= count:
                by_rank.setdefault(item.rank, item)
        missing = [k for k in range(1, count + 1) if k not in by_rank]
        if missing and len(value.documents) == count:
            # one verdict per document, in rank order, with the rank numbers garbled: read by order
            return {k: item for k, item in enumerate(value.documents, 1)}, None
        if missing:
            return None, f"no verdict for the documents ranked {', '.join(map(str, missing))} (of {count})"
        return by_rank, None

    return read


@register
class ContextPrecisionEvaluator(RagJudgeEvaluator):
    """Rank-weighted precision of the retrieved chunks useful for the reference answer (or, without
    one, for the response), 0-1, every chunk judged in one call; verdicts by rank in
    ``context_precision_properties["chunks"]``."""

    metric = "context_precision"
    prefix = "context_precision"
    score_key = "context_precision"
    secondary = ("context_precision_chunks",)
    inputs = (
        InputSpec("query", "text", description="the user's question"),
        CONTEXT,
        InputSpec("ground_truth", "text", required=False, description="the reference answer"),
        InputSpec("response", "text", required=False, description="the response (without a reference)"),
    )
    input_modes = (("query", "context", "ground_truth"), ("query", "context", "response"))
    description = "LLM judge: rank-weighted precision of the chunks useful for the answer (0-1, one call)"
    ragas_calls_per_row = "one per retrieved chunk"

    def __init__(self, model_config: Any, *, threshold: float | None = None,
                 use_reference: bool | None = None, **kwargs: Any) -> None:
        super().__init__(model_config, threshold=threshold, **kwargs)
        self.use_reference = use_reference

    def options(self) -> dict[str, Any]:
        return {**super().options(), "use_reference": self.use_reference}

    def prompts(self) -> list[PromptTemplate]:
        return [load_prompt("rag_context_precision")]

    def _answer(self, inputs: dict[str, Any]) -> tuple[str, str]:
        reference, response = inputs.get("ground_truth"), inputs.get("response")
        if self.use_reference is not False and reference is not None:
            return reference, "reference answer"
        if self.use_reference is True:
            raise ConfigurationError("context_precision(use_reference=True) needs ground_truth")
        if response is None:
            raise ConfigurationError("context_precision without a reference needs the response")
        return response, "response"

    async def _single(self, **inputs: Any) -> Outcome:
        answer, answer_name = self._answer(inputs)
        docs = context_documents(inputs["context"])
        if not docs:
            return self.scored(0.0, outcome="empty_context", reason="No context was retrieved.",
                               properties={"chunks": [], "judged_for": answer_name},
                               context_precision_chunks=0)
        ranked = [{**d, "id": str(k)} for k, d in enumerate(docs, 1)]
        reply = await ask(self.client(), load_prompt("rag_context_precision"),
                          {"question": as_query(inputs.get("query")), "answer": answer,
                           "documents": format_documents(ranked)},
                          chunk_reader(len(docs)), schema=chunk_schema(len(docs)),
                          params={"answer_name": answer_name},
                          what="chunk verdicts")
        by_rank = reply.value
        useful = [by_rank[k].verdict == "useful" for k in range(1, len(docs) + 1)]
        chunks = [{"rank": k, "document": str(d.get("id")), "verdict": by_rank[k].verdict,
                   "reason": by_rank[k].reason} for k, d in enumerate(docs, 1)]
        score = average_precision(useful)
        reason = (f"{sum(useful)} of {len(docs)} retrieved chunks useful for the {answer_name}"
                  + (f" (ranks {', '.join(str(c['rank']) for c in chunks if c['verdict'] == 'useful')})."
                     if any(useful) else "."))
        props = {**reply.properties, "chunks": chunks, "judged_for": answer_name}
        return self.scored(score, outcome="chunks", reason=reason, properties=props,
                           context_precision_chunks=len(docs))


__all__ = ["ContextPrecisionEvaluator", "chunk_reader"]
