# mypy: ignore-errors
"""ToolCallAccuracyEvaluator with explicit tool calls (flat format) and with calls inside a response."""
import os

from azure.ai.evaluation import ToolCallAccuracyEvaluator

from _agent_data import QUERY, RESPONSE, TOOL_DEFINITIONS
from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
accuracy = ToolCallAccuracyEvaluator(model_config)
tool_call = {"type": "tool_call", "tool_call_id": "call_1", "name": "fetch_weather", "arguments": {"location": "Seattle"}}
weather_tool = {"name": "fetch_weather", "description": "Fetches the weather information for the specified location.",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}
emit({
    "explicit": accuracy(query="How is the weather in Seattle? [J5]", tool_calls=[tool_call], tool_definitions=[weather_tool]),
    "from_response": accuracy(query=QUERY, response=RESPONSE, tool_definitions=TOOL_DEFINITIONS),
})
