# mypy: ignore-errors
"""F1 on a few response/ground-truth pairs, default threshold."""
from azure.ai.evaluation import F1ScoreEvaluator

from _emit import emit

f1 = F1ScoreEvaluator()
pairs = [
    ("Tokyo is the capital of Japan.", "The capital of Japan is Tokyo."),
    ("The Eiffel Tower is in Paris.", "Paris is home to the Eiffel Tower, in France."),
    ("Blue", "The sky is blue today."),
    ("Completely unrelated words here", "Nothing matches at all"),
]
emit([f1(response=r, ground_truth=g) for r, g in pairs])
