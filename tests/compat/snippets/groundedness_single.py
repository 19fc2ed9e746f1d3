# mypy: ignore-errors
"""Groundedness on one row, with and without a query."""
import os

from azure.ai.evaluation import GroundednessEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
groundedness = GroundednessEvaluator(model_config)
emit({
    "with_query": groundedness(
        query="When was the Eiffel Tower built?",
        context="The Eiffel Tower was built between 1887 and 1889 for the World's Fair.",
        response="It was built from 1887 to 1889. [J5]",
    ),
    "without_query": groundedness(
        context="The Eiffel Tower was built between 1887 and 1889 for the World's Fair.",
        response="The tower was finished in 1889. [J3]",
    ),
    "custom_threshold": GroundednessEvaluator(model_config, threshold=5)(
        context="Water boils at 100 degrees Celsius at sea level.",
        response="Water boils at 100 C at sea level.",
    ),
})
