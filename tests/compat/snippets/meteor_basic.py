# mypy: ignore-errors
"""METEOR with default and custom alpha/beta/gamma (the SDK needs nltk's wordnet)."""
from azure.ai.evaluation import MeteorScoreEvaluator

from _emit import emit

out = [
    MeteorScoreEvaluator()(response="Tokyo is the capital of Japan.", ground_truth="The capital of Japan is Tokyo."),
    MeteorScoreEvaluator(alpha=0.8, beta=2.0, gamma=0.3, threshold=0.4)(
        response="The cats are running.", ground_truth="A cat runs."
    ),
]
emit(out)
