# mypy: ignore-errors
"""Coherence of a three-turn conversation."""
import os

from azure.ai.evaluation import CoherenceEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "messages": [
        {"role": "user", "content": "Hi, can you help me plan a trip?"},
        {"role": "assistant", "content": "Of course. Where would you like to go? [J5]"},
        {"role": "user", "content": "Japan in spring."},
        {"role": "assistant", "content": "Spring is cherry blossom season. Book early. [J4]"},
        {"role": "user", "content": "How long should I stay?"},
        {"role": "assistant", "content": "Two weeks, blue, because trains. [J2]"},
    ]
}
emit(CoherenceEvaluator(model_config)(conversation=conversation))
