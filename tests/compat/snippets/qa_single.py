# mypy: ignore-errors
"""QAEvaluator: the composite of groundedness, relevance, coherence, fluency, similarity and F1."""
import os

from azure.ai.evaluation import QAEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
qa = QAEvaluator(model_config=model_config)
emit(qa(
    query="Which river runs through Paris?",
    response="The Seine runs through Paris.",
    context="Paris is built on both banks of the river Seine.",
    ground_truth="The Seine.",
))
