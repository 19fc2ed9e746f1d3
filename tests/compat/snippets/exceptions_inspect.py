# mypy: ignore-errors
"""Catching EvaluationException from evaluators and evaluate(): category, blame, enum values."""
import json
import os
import tempfile
from pathlib import Path

from azure.ai.evaluation import (
    BleuScoreEvaluator,
    CoherenceEvaluator,
    F1ScoreEvaluator,
    FluencyEvaluator,
    QAEvaluator,
    RelevanceEvaluator,
    RougeScoreEvaluator,
    RougeType,
    SimilarityEvaluator,
    evaluate,
)
from azure.ai.evaluation._exceptions import ErrorBlame, ErrorCategory, EvaluationException

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
tmp = tempfile.mkdtemp()
good = Path(tmp) / "data.jsonl"
good.write_text(json.dumps({"response": "Paris", "ground_truth": "Paris"}) + "\n")
cases = {
    "bleu_no_ground_truth": lambda: BleuScoreEvaluator()(response="a cat"),
    "rouge_no_response": lambda: RougeScoreEvaluator(RougeType.ROUGE_L)(ground_truth="a cat"),
    "coherence_nothing": lambda: CoherenceEvaluator(model_config)(),
    "fluency_nothing": lambda: FluencyEvaluator(model_config)(),
    "relevance_query_only": lambda: RelevanceEvaluator(model_config)(query="What is the capital?"),
    "similarity_no_ground_truth": lambda: SimilarityEvaluator(model_config)(query="q", response="r"),
    "qa_no_context": lambda: QAEvaluator(model_config)(query="q", response="r"),
    "evaluate_no_evaluators": lambda: evaluate(data=str(good), evaluators={}),
    "evaluate_no_data": lambda: evaluate(data=None, evaluators={"f1": F1ScoreEvaluator()}),
    "evaluate_csv_missing": lambda: evaluate(data=str(Path(tmp) / "x.csv"), evaluators={"f1": F1ScoreEvaluator()}),
    "evaluate_bad_mapping": lambda: evaluate(
        data=str(good), evaluators={"f1": F1ScoreEvaluator()},
        evaluator_config={"f1": {"column_mapping": {"response": "response"}}},
    ),
    "evaluate_target_not_callable": lambda: evaluate(data=str(good), evaluators={"f1": F1ScoreEvaluator()}, target=3),
}
out = {}
for name, call in cases.items():
    try:
        call()
        out[name] = None
    except EvaluationException as exc:
        out[name] = {
            "category": exc.category.name,
            "category_value": exc.category.value,
            "blame": exc.blame.value,
            "user_error": exc.blame == ErrorBlame.USER_ERROR,
            "invalid_or_missing": exc.category in (ErrorCategory.INVALID_VALUE, ErrorCategory.MISSING_FIELD),
            "is_exception": isinstance(exc, Exception),
            "has_message": bool(exc.message),
        }
out["categories"] = [c.name for c in ErrorCategory]
out["blames"] = {b.name: b.value for b in ErrorBlame}
emit(out, tmp)
