# mypy: ignore-errors
"""Other evaluators an SDK user points at a conversation: response completeness (ground truth per
assistant turn), retrieval and groundedness with citation documents, coherence with a threshold."""
import os

from azure.ai.evaluation import (
    CoherenceEvaluator,
    GroundednessEvaluator,
    ResponseCompletenessEvaluator,
    RetrievalEvaluator,
)

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
messages = [
    {"role": "user", "content": "Which tents do you sell?",
     "context": {"citations": [{"id": "doc-1", "title": "Catalogue", "content": "Tents: Alpine 2, Summit 4. [J5]"}]}},
    {"role": "assistant", "content": "The Alpine 2 and the Summit 4. [J4]",
     "ground_truth": "We sell the Alpine 2 and the Summit 4 tents."},
    {"role": "user", "content": "Is the Summit 4 waterproof?"},
    {"role": "assistant", "content": "I do not know. [J2]", "ground_truth": "Yes, it is rated 3000 mm."},
]
conversation = {"messages": messages, "context": {"citations": [{"id": "faq", "content": "All tents ship free."}]}}
emit({
    "completeness": ResponseCompletenessEvaluator(model_config)(conversation=conversation),
    "retrieval": RetrievalEvaluator(model_config)(conversation=conversation),
    "groundedness": GroundednessEvaluator(model_config, threshold=4)(conversation=conversation),
    "coherence": CoherenceEvaluator(model_config, threshold=2.5)(conversation=conversation),
})
