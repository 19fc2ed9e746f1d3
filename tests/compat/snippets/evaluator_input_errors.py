# mypy: ignore-errors
"""Calling evaluators with wrong inputs: the SDK's EvaluationException, its category and blame."""
import os

from azure.ai.evaluation import F1ScoreEvaluator, GroundednessEvaluator, RelevanceEvaluator
from azure.ai.evaluation._exceptions import EvaluationException

from _emit import emit, error_info

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
out = {}
cases = {
    "f1_missing_ground_truth": lambda: F1ScoreEvaluator()(response="hello"),
    "f1_none_response": lambda: F1ScoreEvaluator()(response=None, ground_truth="hello"),
    "groundedness_nothing": lambda: GroundednessEvaluator(model_config)(),
    "relevance_empty_conversation": lambda: RelevanceEvaluator(model_config)(conversation={"messages": []}),
}
for name, call in cases.items():
    try:
        call()
        out[name] = None
    except EvaluationException as exc:
        out[name] = error_info(exc)
emit(out)
