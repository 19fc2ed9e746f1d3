# mypy: ignore-errors
"""ROUGE-L and ROUGE-2 with custom precision/recall/f1 thresholds, identical and disjoint texts."""
from azure.ai.evaluation import RougeScoreEvaluator, RougeType

from _emit import emit

strict = RougeScoreEvaluator(rouge_type=RougeType.ROUGE_L, precision_threshold=0.9, recall_threshold=0.1,
                             f1_score_threshold=0.6)
bigram = RougeScoreEvaluator(RougeType.ROUGE_2, f1_score_threshold=0.25)
emit({
    "identical": strict(response="Paris is the capital of France.", ground_truth="Paris is the capital of France."),
    "partial": strict(response="Paris is a city in France.", ground_truth="Paris is the capital of France."),
    "disjoint": bigram(response="alpha beta", ground_truth="gamma delta"),
    "bigram": bigram(response="the cat sat on the mat", ground_truth="the cat lay on the mat"),
})
