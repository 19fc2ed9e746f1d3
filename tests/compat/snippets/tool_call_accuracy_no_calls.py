# mypy: ignore-errors
"""ToolCallAccuracyEvaluator when the response holds no tool call: the SDK's not-applicable result."""
import os

from azure.ai.evaluation import ToolCallAccuracyEvaluator

from _emit import emit, error_info

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
weather_tool = {"name": "fetch_weather", "description": "Fetches the weather.",
                "parameters": {"type": "object", "properties": {"location": {"type": "string"}}}}
try:
    result = ToolCallAccuracyEvaluator(model_config)(query="Hi", response="Hello there!", tool_definitions=[weather_tool])
except Exception as exc:
    result = {"raised": error_info(exc, with_type=True)}
emit(result)
