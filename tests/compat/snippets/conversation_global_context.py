# mypy: ignore-errors
"""A RAG chat with a conversation-level context and contexts on user and assistant turns, through
groundedness, relevance and retrieval."""
import os

from azure.ai.evaluation import GroundednessEvaluator, RelevanceEvaluator, RetrievalEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "context": "The store opens at 9am and closes at 6pm. Returns are accepted for 30 days. [J3]",
    "messages": [
        {"role": "user", "content": "When do you open?", "context": "Opening hours page."},
        {"role": "assistant", "content": "We open at 9am.", "context": "The store opens at 9am. [J5]"},
        {"role": "user", "content": "Can I return a jacket after 40 days? [J2]"},
        {"role": "assistant", "content": "Yes, any time. [J1]"},
        {"role": "user", "content": "Thanks!"},
        {"role": "assistant", "content": "You're welcome."},
    ],
}
emit({
    "groundedness": GroundednessEvaluator(model_config)(conversation=conversation),
    "relevance": RelevanceEvaluator(model_config)(conversation=conversation),
    "retrieval": RetrievalEvaluator(model_config)(conversation=conversation),
})
