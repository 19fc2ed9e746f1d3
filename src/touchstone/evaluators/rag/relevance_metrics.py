"""Imports the RAG relevance metrics (answer_relevancy, context_relevance) so that the registry lists
them (one line in the registry's ``_MODULES``)."""

from __future__ import annotations

from touchstone.evaluators.rag.answer_relevancy import AnswerRelevancyEvaluator
from touchstone.evaluators.rag.context_relevance import ContextRelevanceEvaluator

__all__ = ["AnswerRelevancyEvaluator", "ContextRelevanceEvaluator"]
