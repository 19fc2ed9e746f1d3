# mypy: ignore-errors
"""Malformed model configurations rejected when a judge evaluator is built, with the SDK's category;
a valid one builds (and nothing is sent until the evaluator is called)."""
import os

from azure.ai.evaluation import CoherenceEvaluator, GroundednessEvaluator, RelevanceEvaluator
from azure.ai.evaluation._exceptions import EvaluationException

from _emit import emit, error_info

url = os.environ["COMPAT_BASE_URL"]
key = os.environ["COMPAT_API_KEY"]
configs = {
    "valid": {"type": "openai", "model": "gpt-4o", "api_key": key, "base_url": url, "organization": "o"},
    "valid_azure": {"azure_endpoint": "https://example.openai.azure.com", "azure_deployment": "gpt-4o",
                    "api_key": key, "api_version": "2024-06-01"},
    "empty": {},
    "openai_no_model": {"type": "openai", "api_key": key, "base_url": url},
    "openai_unknown_key": {"type": "openai", "model": "gpt-4o", "api_key": key, "base_url": url, "temperature": 0},
    "openai_model_not_str": {"type": "openai", "model": 4, "api_key": key, "base_url": url},
    "openai_wrong_type_name": {"type": "azure", "model": "gpt-4o", "api_key": key, "base_url": url},
    "openai_headers_not_dict": {"type": "openai", "model": "gpt-4o", "api_key": key, "base_url": url,
                                "extra_headers": "x"},
    "azure_no_deployment": {"azure_endpoint": "https://example.openai.azure.com", "api_key": key},
    "azure_no_endpoint": {"azure_deployment": "gpt-4o", "api_key": key},
    "azure_unknown_key": {"azure_endpoint": "https://example.openai.azure.com", "azure_deployment": "gpt-4o",
                          "api_key": key, "region": "eu"},
}
out = {}
for name, config in configs.items():
    for cls in (RelevanceEvaluator, CoherenceEvaluator, GroundednessEvaluator):
        label = f"{name}/{cls.__name__}"
        try:
            evaluator = cls(config)
        except EvaluationException as exc:
            out[label] = {"phase": "constructor", **error_info(exc)}
            continue
        except Exception as exc:
            out[label] = {"phase": "constructor", "other_error": type(exc).__name__}
            continue
        out[label] = {"phase": "built"}
emit(out)
