# mypy: ignore-errors
"""IntentResolutionEvaluator on strings and on agent messages with tool definitions."""
import os

from azure.ai.evaluation import IntentResolutionEvaluator

from _agent_data import QUERY, RESPONSE, TOOL_DEFINITIONS
from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
intent = IntentResolutionEvaluator(model_config=model_config)
emit({
    "strings": intent(query="What is the weather today?", response="The weather is sunny. [J5]"),
    "messages": intent(query=QUERY, response=RESPONSE, tool_definitions=TOOL_DEFINITIONS),
})
