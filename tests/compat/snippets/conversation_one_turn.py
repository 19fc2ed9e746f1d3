# mypy: ignore-errors
"""A conversation with a single exchange: the SDK returns that turn's result as is."""
import os

from azure.ai.evaluation import CoherenceEvaluator, FluencyEvaluator, GroundednessEvaluator, RelevanceEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "messages": [
        {"role": "user", "content": "What colour is the sky?"},
        {"role": "assistant", "content": "Blue on a clear day. [J2]", "context": "The sky appears blue."},
    ]
}
emit({
    "coherence": CoherenceEvaluator(model_config)(conversation=conversation),
    "fluency": FluencyEvaluator(model_config)(conversation=conversation),
    "groundedness": GroundednessEvaluator(model_config)(conversation=conversation),
    "relevance": RelevanceEvaluator(model_config, threshold=2)(conversation=conversation),
})
