# mypy: ignore-errors
"""Similarity against a ground truth."""
import os

from azure.ai.evaluation import SimilarityEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
similarity = SimilarityEvaluator(model_config)
emit(similarity(query="What is the tallest mountain?", response="Mount Everest. [J5]",
                ground_truth="Mount Everest is the tallest mountain on Earth."))
