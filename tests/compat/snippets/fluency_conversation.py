# mypy: ignore-errors
"""Fluency of a conversation, with a custom threshold."""
import os

from azure.ai.evaluation import FluencyEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "messages": [
        {"role": "user", "content": "What's the weather like?"},
        {"role": "assistant", "content": "It is sunny and warm today. [J5]"},
        {"role": "user", "content": "Tomorrow?"},
        {"role": "assistant", "content": "Rain tomorrow maybe is. [J2]"},
    ]
}
emit(FluencyEvaluator(model_config, threshold=4)(conversation=conversation))
