# mypy: ignore-errors
"""TaskAdherenceEvaluator on agent messages, passing and failing."""
import os

from azure.ai.evaluation import TaskAdherenceEvaluator

from _agent_data import QUERY, RESPONSE, TOOL_DEFINITIONS
from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
adherence = TaskAdherenceEvaluator(model_config)
failing = RESPONSE[:-1] + [{"role": "assistant", "content": [{"type": "text", "text": "I will not help. [J1]"}]}]
emit({
    "pass": adherence(query=QUERY, response=RESPONSE, tool_definitions=TOOL_DEFINITIONS),
    "fail": adherence(query=QUERY, response=failing),
})
