# mypy: ignore-errors
"""Default thresholds of every evaluator as they appear in results (types included)."""
import os

from azure.ai.evaluation import (
    CoherenceEvaluator, F1ScoreEvaluator, FluencyEvaluator,
    GroundednessEvaluator, RelevanceEvaluator, RetrievalEvaluator, RougeScoreEvaluator, RougeType, SimilarityEvaluator,
)

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
out = {
    "f1": F1ScoreEvaluator()(response="a cat", ground_truth="a cat")["f1_score_threshold"],
    "rouge": RougeScoreEvaluator(RougeType.ROUGE_1)(response="a cat", ground_truth="a cat")["rouge_threshold"],
    "coherence": CoherenceEvaluator(model_config)(query="q", response="r")["coherence_threshold"],
    "fluency": FluencyEvaluator(model_config)(response="r")["fluency_threshold"],
    "groundedness": GroundednessEvaluator(model_config)(context="c", response="r")["groundedness_threshold"],
    "relevance": RelevanceEvaluator(model_config)(query="q", response="r")["relevance_threshold"],
    "retrieval": RetrievalEvaluator(model_config)(query="q", context="c")["retrieval_threshold"],
    "similarity": SimilarityEvaluator(model_config)(query="q", response="r", ground_truth="g")["similarity_threshold"],
    "custom_float": CoherenceEvaluator(model_config, threshold=2.5)(query="q", response="r")["coherence_threshold"],
}
emit(out)
