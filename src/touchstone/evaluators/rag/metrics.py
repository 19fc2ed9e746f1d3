"""Imports the claim-based RAG metrics so that the registry lists them (one line in the registry's
``_MODULES``)."""

from __future__ import annotations

from touchstone.evaluators.rag.answer_correctness import AnswerCorrectnessEvaluator
from touchstone.evaluators.rag.answer_similarity import AnswerSimilarityEvaluator
from touchstone.evaluators.rag.context_entity_recall import ContextEntityRecallEvaluator
from touchstone.evaluators.rag.context_precision import ContextPrecisionEvaluator
from touchstone.evaluators.rag.context_recall import ContextRecallEvaluator
from touchstone.evaluators.rag.faithfulness import FaithfulnessEvaluator

__all__ = [
    "AnswerCorrectnessEvaluator",
    "AnswerSimilarityEvaluator",
    "ContextEntityRecallEvaluator",
    "ContextPrecisionEvaluator",
    "ContextRecallEvaluator",
    "FaithfulnessEvaluator",
]
