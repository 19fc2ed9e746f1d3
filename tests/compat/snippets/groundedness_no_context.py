# mypy: ignore-errors
"""Groundedness given a query and a response but no context (the SDK scores it)."""
import os

from azure.ai.evaluation import GroundednessEvaluator

from _emit import emit, error_info

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
try:
    result = GroundednessEvaluator(model_config)(query="What is 2 + 2?", response="2 + 2 is 4. [J2]")
except Exception as exc:  # what a user sees either way
    result = {"raised": error_info(exc, with_type=True)}
emit(result)
