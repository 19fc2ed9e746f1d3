# mypy: ignore-errors
"""F1 edge cases: texts empty after normalisation, punctuation only, repeated tokens, a custom threshold."""
from azure.ai.evaluation import F1ScoreEvaluator

from _emit import emit

results = {}
f1 = F1ScoreEvaluator()
results["both_empty_after_normalisation"] = f1(response="a", ground_truth="the")
results["response_empty_after_normalisation"] = f1(response="An", ground_truth="cat")
results["punctuation"] = f1(response="!!!", ground_truth="...")
results["repeated"] = f1(response="the cat cat cat", ground_truth="cat sat")
results["case_and_articles"] = f1(response="THE Cat, sat!", ground_truth="a cat sat")
results["custom_threshold"] = F1ScoreEvaluator(threshold=0.9)(response="cat sat on mat", ground_truth="cat sat")
emit(results)
