# mypy: ignore-errors
"""ResponseCompletenessEvaluator against a ground truth, default and custom threshold."""
import os

from azure.ai.evaluation import ResponseCompletenessEvaluator

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
emit([
    ResponseCompletenessEvaluator(model_config)(
        response="The capital of Japan is Tokyo. [J5]",
        ground_truth="Tokyo is Japan's capital, known for its blend of tradition and modernity."),
    ResponseCompletenessEvaluator(model_config=model_config, threshold=4)(
        response="Tokyo. [J3]", ground_truth="Tokyo, the capital, has about 14 million inhabitants."),
])
