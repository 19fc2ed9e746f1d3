# mypy: ignore-errors
"""Fluency on a response alone, with a custom threshold."""
import os

from azure.ai.evaluation import FluencyEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
emit([
    FluencyEvaluator(model_config)(response="The meeting have been moved to tomorrow morning. [J2]"),
    FluencyEvaluator(model_config, threshold=2)(response="The meeting has moved to tomorrow morning."),
])
