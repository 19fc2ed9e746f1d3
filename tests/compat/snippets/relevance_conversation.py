# mypy: ignore-errors
"""Relevance of a conversation without any context in its turns."""
import os

from azure.ai.evaluation import RelevanceEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "messages": [
        {"role": "user", "content": "Recommend a book about space."},
        {"role": "assistant", "content": "Try 'Cosmos' by Carl Sagan. [J4]"},
        {"role": "user", "content": "Anything shorter?"},
        {"role": "assistant", "content": "I like cooking pasta. [J1]"},
    ]
}
emit(RelevanceEvaluator(model_config)(conversation=conversation))
