# mypy: ignore-errors
"""Retrieval of a conversation whose assistant turns carry their retrieved context."""
import os

from azure.ai.evaluation import RetrievalEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "messages": [
        {"role": "user", "content": "Who wrote Hamlet?"},
        {"role": "assistant", "content": "William Shakespeare.",
         "context": "Hamlet is a tragedy written by William Shakespeare around 1600. [J5]"},
        {"role": "user", "content": "When did he die?"},
        {"role": "assistant", "content": "In 1616.",
         "context": "The Globe Theatre was rebuilt in 1997. [J2]"},
    ]
}
emit(RetrievalEvaluator(model_config)(conversation=conversation))
