# mypy: ignore-errors
"""Single-turn judge evaluators with the options and inputs a user tries next: custom int and float
thresholds, an extra query or context, a list of context strings, an empty context, a reasoning model."""
import os

from azure.ai.evaluation import (
    CoherenceEvaluator, FluencyEvaluator, GroundednessEvaluator, RelevanceEvaluator, RetrievalEvaluator,
    SimilarityEvaluator,
)

from _emit import emit, error_info

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
cases = {
    "fluency_with_query": lambda: FluencyEvaluator(model_config)(query="Hi?", response="Hello there. [J5]"),
    "relevance_with_context": lambda: RelevanceEvaluator(model_config)(
        query="Is it open?", response="Yes, 9-5. [J4]", context="Open 9-5."),
    "similarity_threshold_4": lambda: SimilarityEvaluator(model_config, threshold=4)(
        query="Capital of Italy?", response="Rome, I think. [J3]", ground_truth="Rome"),
    "groundedness_float_threshold": lambda: GroundednessEvaluator(model_config, threshold=3.5)(
        context="The museum opens at 10.", response="It opens at 10. [J3]"),
    "groundedness_context_list": lambda: GroundednessEvaluator(model_config)(
        context=["The museum opens at 10.", "It closes at 18."], response="Open 10 to 18. [J4]"),
    "groundedness_empty_context_with_query": lambda: GroundednessEvaluator(model_config)(
        query="When does it open?", context="", response="At 10. [J4]"),
    "retrieval_threshold_5": lambda: RetrievalEvaluator(model_config, threshold=5)(
        query="Opening hours?", context="The museum opens at 10. [J4]"),
    "coherence_reasoning_model": lambda: CoherenceEvaluator(model_config, is_reasoning_model=True)(
        query="Why is the sky blue?", response="Because blue light scatters more. [J2]"),
}
out = {}
for name, call in cases.items():
    try:
        out[name] = call()
    except Exception as exc:  # what a user sees either way
        out[name] = {"raised": error_info(exc, with_type=True)}
emit(out)
