# mypy: ignore-errors
"""Coherence on one row."""
import os

from azure.ai.evaluation import CoherenceEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
coherence = CoherenceEvaluator(model_config=model_config)
emit(coherence(query="Explain photosynthesis briefly.",
               response="Plants turn light, water and carbon dioxide into sugar and oxygen. [J4]"))
