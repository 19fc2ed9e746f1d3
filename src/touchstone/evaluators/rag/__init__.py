"""RAG metrics (ragas' names, touchstone's calls): claim-based faithfulness and context recall,
context precision, context entity recall, answer similarity and answer correctness, answer relevancy
and context relevance. The shared claim primitives are in :mod:`touchstone.evaluators.rag.claims`."""

from touchstone.evaluators.rag.answer_correctness import AnswerCorrectnessEvaluator
from touchstone.evaluators.rag.answer_relevancy import AnswerRelevancyEvaluator
from touchstone.evaluators.rag.answer_similarity import AnswerSimilarityEvaluator
from touchstone.evaluators.rag.context_entity_recall import ContextEntityRecallEvaluator
from touchstone.evaluators.rag.context_precision import ContextPrecisionEvaluator
from touchstone.evaluators.rag.context_recall import ContextRecallEvaluator
from touchstone.evaluators.rag.context_relevance import ContextRelevanceEvaluator
from touchstone.evaluators.rag.faithfulness import FaithfulnessEvaluator

__all__ = [
    "AnswerCorrectnessEvaluator",
    "AnswerRelevancyEvaluator",
    "AnswerSimilarityEvaluator",
    "ContextEntityRecallEvaluator",
    "ContextPrecisionEvaluator",
    "ContextRecallEvaluator",
    "ContextRelevanceEvaluator",
    "FaithfulnessEvaluator",
]
