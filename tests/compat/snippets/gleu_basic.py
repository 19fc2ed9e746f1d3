# mypy: ignore-errors
"""GLEU on a few pairs, default and custom threshold."""
from azure.ai.evaluation import GleuScoreEvaluator

from _emit import emit

gleu = GleuScoreEvaluator()
out = [
    gleu(response="Tokyo is the capital of Japan.", ground_truth="The capital of Japan is Tokyo."),
    gleu(response="The cat sat on the mat.", ground_truth="A cat was sitting on the mat."),
    GleuScoreEvaluator(threshold=0.9)(response="one two three", ground_truth="one two three"),
]
emit(out)
