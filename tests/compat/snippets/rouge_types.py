# mypy: ignore-errors
"""ROUGE with every rouge type on one pair, default thresholds."""
from azure.ai.evaluation import RougeScoreEvaluator, RougeType

from _emit import emit

response = "The quick brown fox jumps over the lazy dog near the river bank."
ground_truth = "A quick brown fox jumped over a lazy dog by the bank of the river."
out = {}
for rouge_type in (RougeType.ROUGE_1, RougeType.ROUGE_2, RougeType.ROUGE_3, RougeType.ROUGE_4,
                   RougeType.ROUGE_5, RougeType.ROUGE_L):
    out[rouge_type.value] = RougeScoreEvaluator(rouge_type=rouge_type)(response=response, ground_truth=ground_truth)
emit(out)
