# mypy: ignore-errors
"""Retrieval (LLM-judged) of a context for a query."""
import os

from azure.ai.evaluation import RetrievalEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
retrieval = RetrievalEvaluator(model_config)
emit(retrieval(query="Where is the Louvre?",
               context="The Louvre is a museum in Paris, on the right bank of the Seine. [J3]"))
