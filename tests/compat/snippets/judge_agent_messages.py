# mypy: ignore-errors
"""Quality evaluators on an agent's messages: tool calls, a file_search result, an unfinished reply."""
import os

from azure.ai.evaluation import CoherenceEvaluator, FluencyEvaluator, GroundednessEvaluator, RelevanceEvaluator

from _agent_data import QUERY, RESPONSE
from _emit import emit, error_info

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
UNFINISHED = RESPONSE[:1] + [{"role": "assistant", "content": [
    {"type": "function_call", "tool_call_id": "c1", "name": "get_orders", "arguments": {"account_number": "888"}}]}]
FILE_SEARCH = [
    {"role": "assistant", "content": [{"type": "tool_call", "tool_call_id": "fs1", "name": "file_search",
                                       "arguments": {"queries": ["return policy"]}}]},
    {"role": "tool", "tool_call_id": "fs1", "content": [{"type": "tool_result", "tool_result": [
        {"file_name": "policy.md", "content": [{"type": "text", "text": "Returns are accepted within 30 days."}]}]}]},
    {"role": "assistant", "content": [{"type": "text", "text": "You can return items within 30 days. [J5]"}]},
]
ONE = [{"role": "assistant", "content": [{"type": "text", "text": "Returns within 30 days. [J3]"}]}]
out = {}
cases = {
    "relevance_tools": lambda: RelevanceEvaluator(model_config)(query=QUERY, response=RESPONSE),
    "coherence_tools": lambda: CoherenceEvaluator(model_config)(query=QUERY, response=RESPONSE),
    "fluency_tools": lambda: FluencyEvaluator(model_config)(response=RESPONSE),
    "relevance_unfinished": lambda: RelevanceEvaluator(model_config)(query=QUERY, response=UNFINISHED),
    "fluency_unfinished": lambda: FluencyEvaluator(model_config)(response=UNFINISHED),
    "groundedness_unfinished": lambda: GroundednessEvaluator(model_config)(query=QUERY, response=UNFINISHED),
    "groundedness_file_search": lambda: GroundednessEvaluator(model_config)(query="Return policy?", response=FILE_SEARCH),
    "groundedness_no_tools_one_message": lambda: GroundednessEvaluator(model_config)(query="Return policy?", response=ONE),
    "groundedness_no_tools_messages": lambda: GroundednessEvaluator(model_config)(query=QUERY, response=RESPONSE),
}
for name, call in cases.items():
    try:
        out[name] = call()
    except Exception as exc:  # what a user sees either way
        out[name] = {"raised": error_info(exc, with_type=True)}
emit(out)
