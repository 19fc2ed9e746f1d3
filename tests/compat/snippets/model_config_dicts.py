# mypy: ignore-errors
"""Model configurations are plain dicts: isinstance, json.dumps, item assignment, extra keys."""
import json

from azure.ai.evaluation import AzureOpenAIModelConfiguration, OpenAIModelConfiguration

from _emit import emit

azure = AzureOpenAIModelConfiguration(
    azure_endpoint="https://example.openai.azure.com", azure_deployment="gpt-4o", api_key="k-123",
)
azure["api_version"] = "2024-06-01"
openai = OpenAIModelConfiguration(model="gpt-4o", api_key="k-456", base_url="http://127.0.0.1:1/v1")
openai["organization"] = "org-1"
emit({
    "azure_is_dict": isinstance(azure, dict),
    "openai_is_dict": isinstance(openai, dict),
    "azure_json": json.loads(json.dumps(azure)),
    "openai_json": json.loads(json.dumps(openai)),
    "azure_keys": sorted(azure),
    "openai_copy_equal": dict(openai) == openai,
    "openai_get": openai.get("base_url"),
})
