# mypy: ignore-errors
"""Model configurations built from the environment, copied, updated, json-dumped, then used."""
import copy
import json
import os

from azure.ai.evaluation import (
    AzureOpenAIModelConfiguration,
    CoherenceEvaluator,
    OpenAIModelConfiguration,
    RelevanceEvaluator,
)

from _emit import emit

os.environ["MY_OPENAI_MODEL"] = "gpt-4o"
os.environ["MY_AZURE_ENDPOINT"] = "https://example.openai.azure.com"
model_config = OpenAIModelConfiguration(
    type="openai",
    model=os.environ["MY_OPENAI_MODEL"],
    base_url=os.environ["COMPAT_BASE_URL"],
    api_key=os.environ["COMPAT_API_KEY"],
)
azure_config = AzureOpenAIModelConfiguration(
    azure_endpoint=os.environ["MY_AZURE_ENDPOINT"],
    azure_deployment=os.environ.get("MY_AZURE_DEPLOYMENT", "gpt-4o-mini"),
    api_version=os.environ.get("MY_AZURE_API_VERSION", "2024-06-01"),
)
azure_config.update({"api_key": "k-789"})
cloned = copy.deepcopy(model_config)
cloned["model"] = "gpt-4o-mini"
merged = {**model_config, "organization": "org-2"}
saved = json.dumps(model_config, sort_keys=True)
restored = json.loads(saved)
coherence = CoherenceEvaluator(model_config=restored)
relevance = RelevanceEvaluator(model_config)
emit({
    "model_config_type": type(model_config).__name__ == "dict",
    "keys": sorted(model_config),
    "azure": dict(azure_config),
    "azure_len": len(azure_config),
    "cloned_model": cloned["model"],
    "original_model": model_config["model"],
    "merged_org": merged["organization"],
    "restored_equal": restored == model_config,
    "pop_default": dict(model_config).pop("organization", None),
    "in_check": "base_url" in model_config,
    "coherence": coherence(query="What is the capital of France?", response="Paris. [J5]")["coherence"],
    "relevance": relevance(query="What is the capital of France?", response="Paris. [J3]")["relevance"],
})
