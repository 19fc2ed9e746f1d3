# mypy: ignore-errors
"""Groundedness of a conversation: per-turn scores and their aggregate."""
import os

from azure.ai.evaluation import GroundednessEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "messages": [
        {"role": "user", "content": "What is the boiling point of water?"},
        {"role": "assistant", "content": "100 degrees Celsius at sea level. [J5]",
         "context": "Water boils at 100 degrees Celsius at sea level."},
        {"role": "user", "content": "And its freezing point?"},
        {"role": "assistant", "content": "It freezes at 10 degrees. [J2]",
         "context": "Water freezes at 0 degrees Celsius."},
    ]
}
emit(GroundednessEvaluator(model_config)(conversation=conversation))
