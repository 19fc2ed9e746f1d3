# mypy: ignore-errors
"""BLEU on the README pair and a few more (the SDK tokenises with nltk)."""
from azure.ai.evaluation import BleuScoreEvaluator

from _emit import emit

bleu = BleuScoreEvaluator()
pairs = [
    ("Tokyo is the capital of Japan.", "The capital of Japan is Tokyo."),
    ("The quick brown fox jumps over the lazy dog.", "The quick brown fox jumped over the lazy dog."),
    ("Hello", "Goodbye"),
]
out = [bleu(response=r, ground_truth=g) for r, g in pairs]
out.append(BleuScoreEvaluator(threshold=0.2)(response="a b c d", ground_truth="a b c d"))
emit(out)
