# mypy: ignore-errors
"""Conversation options an SDK user sets: a threshold, evaluating only the last turn, and the
aggregation of per-turn scores."""
import os

from azure.ai.evaluation import CoherenceEvaluator, FluencyEvaluator, GroundednessEvaluator
from azure.ai.evaluation._constants import _AggregationType

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
conversation = {
    "messages": [
        {"role": "user", "content": "Name a planet."},
        {"role": "assistant", "content": "Mars. [J5]", "context": "Mars is a planet."},
        {"role": "user", "content": "Another one?"},
        {"role": "assistant", "content": "Venus. [J3]", "context": "Venus is a planet."},
        {"role": "user", "content": "And a moon?"},
        {"role": "assistant", "content": "The Sun. [J1]", "context": "Titan is a moon of Saturn."},
    ]
}
emit({
    "threshold_4": CoherenceEvaluator(model_config, threshold=4)(conversation=conversation),
    "last_turn": FluencyEvaluator(model_config, eval_last_turn=True)(conversation=conversation),
    "max": GroundednessEvaluator(model_config, conversation_aggregation_type=_AggregationType.MAX)(
        conversation=conversation),
    "min": GroundednessEvaluator(model_config, conversation_aggregation_type=_AggregationType.MIN)(
        conversation=conversation),
    "override": FluencyEvaluator(model_config, conversation_aggregator_override=lambda xs: sum(xs))(
        conversation=conversation),
})
