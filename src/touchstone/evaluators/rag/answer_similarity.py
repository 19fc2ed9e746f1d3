"""``answer_similarity``: cosine between the embeddings of the response and of the reference answer
(ragas' ``answer_similarity``), through touchstone's embedding providers (a local
sentence-transformers model, or an embeddings API with ``model_config``), clipped to 0-1.

An empty text is embedded as a single space, as ragas does; a negative cosine (rare with sentence
embedding models) is reported as 0.0 so that every RAG metric lies in 0-1; ragas reports the raw
cosine."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

import numpy as np

from touchstone.data.kinds import as_text_list
from touchstone.evaluators.registry import register
from touchstone.evaluators.semantic import EmbeddingSimilarityEvaluator
from touchstone.scores import Outcome


def unit_cosine(cosine: float) -> float:
    """A cosine clipped to [0, 1]."""
    return min(1.0, max(0.0, float(cosine)))


def blank_as_space(text: str) -> str:
    return text if text else " "


@register
class AnswerSimilarityEvaluator(EmbeddingSimilarityEvaluator):
    """Embedding cosine between ``response`` and ``ground_truth`` (max over several), clipped to
    0-1; the same options as ``embedding_similarity`` (``model``, ``model_config``...)."""

    metric = "answer_similarity"
    prefix = "answer_similarity"
    score_key = "answer_similarity"
    description = "cosine between response and reference embeddings, clipped to 0-1 (ragas' name)"
    value_range = "0-1"
    default_threshold: ClassVar[float | None] = 0.5

    def _outputs(self, vectors: Mapping[str, np.ndarray], response: str, truths: list[str]) -> Outcome:
        out = super()._outputs(vectors, response, truths)
        raw = float(out[self.score_key])
        value = unit_cosine(raw)
        if value == raw:
            return out
        props = {**(out.get(f"{self.prefix}_properties") or {}), "cosine": raw}
        return self.result(value, properties=props)

    def _score(self, **inputs: Any) -> Outcome:
        return super()._score(**_spaced(inputs))

    async def _ascore(self, **inputs: Any) -> Outcome:
        return await super()._ascore(**_spaced(inputs))

    def score_batch(self, rows: Any) -> list[Outcome]:
        return super().score_batch([_spaced(r) for r in rows])

    async def similarity(self, response: str, reference: str) -> float:
        """The clipped cosine of two texts (used by ``answer_correctness``)."""
        out = await self._ascore(response=response, ground_truth=reference)
        return float(out[self.score_key])


def _spaced(inputs: Mapping[str, Any]) -> dict[str, Any]:
    row = dict(inputs)
    if "response" in row:
        row["response"] = blank_as_space(row["response"] or "")
    if "ground_truth" in row:
        row["ground_truth"] = [blank_as_space(t) for t in as_text_list(row["ground_truth"])]
    return row


__all__ = ["AnswerSimilarityEvaluator", "unit_cosine"]
