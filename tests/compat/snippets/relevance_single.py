# mypy: ignore-errors
"""Relevance on two rows, default and custom threshold."""
import os

from azure.ai.evaluation import RelevanceEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
emit([
    RelevanceEvaluator(model_config)(query="What is the capital of France?", response="Paris. [J5]"),
    RelevanceEvaluator(model_config=model_config, threshold=4)(
        query="How do I reset my password?", response="Bananas are yellow. [J1]"),
])
