# mypy: ignore-errors
"""The bare ``messages=[...]`` argument of the evaluators that take one (a chat in the OpenAI format,
read as a conversation), the single-row inputs beside it, and the errors for malformed messages."""
import os

from azure.ai.evaluation import (
    CoherenceEvaluator,
    FluencyEvaluator,
    RelevanceEvaluator,
    ResponseCompletenessEvaluator,
    RetrievalEvaluator,
)
from azure.ai.evaluation._exceptions import EvaluationException

from _emit import emit, error_info

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
chat = [
    {"role": "system", "content": "You are a helpful travel assistant."},
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": "Paris is the capital of France. [J5]"},
    {"role": "user", "content": "And of Italy?"},
    {"role": "assistant", "content": "I enjoy long walks. [J2]"},
]
one_turn = [
    {"role": "user", "content": "Summarise the meeting."},
    {"role": "assistant", "content": "The team agreed to ship on Friday. [J3]"},
]
out = {}
cases = {
    "relevance_chat": lambda: RelevanceEvaluator(model_config)(messages=chat),
    "relevance_one_turn": lambda: RelevanceEvaluator(model_config)(messages=one_turn),
    "relevance_context_ignored": lambda: RelevanceEvaluator(model_config)(messages=one_turn, context="notes"),
    "fluency_chat": lambda: FluencyEvaluator(model_config)(messages=chat),
    "fluency_one_turn": lambda: FluencyEvaluator(model_config, threshold=4)(messages=one_turn),
    "retrieval_context": lambda: RetrievalEvaluator(model_config)(messages=one_turn, context="Minutes: ship Friday."),
    "retrieval_no_context": lambda: RetrievalEvaluator(model_config)(messages=chat),
    "completeness_ground_truth": lambda: ResponseCompletenessEvaluator(model_config)(
        messages=one_turn, ground_truth="Ship on Friday; QA signs off Thursday."
    ),
    "completeness_turn_ground_truth": lambda: ResponseCompletenessEvaluator(model_config)(
        messages=[one_turn[0], {**one_turn[1], "ground_truth": "Ship on Friday."}], ground_truth="ignored"
    ),
    "completeness_no_ground_truth": lambda: ResponseCompletenessEvaluator(model_config)(messages=one_turn),
    "tool_message": lambda: RelevanceEvaluator(model_config)(messages=[
        {"role": "user", "content": "Weather in Oslo?"},
        {"role": "tool", "content": "4 C, rain"},
        {"role": "assistant", "content": "It is 4 C and raining in Oslo. [J4]"},
    ]),
    "developer_message": lambda: FluencyEvaluator(model_config)(messages=[
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! [J5]"},
    ]),
    "relevance_messages_and_query": lambda: RelevanceEvaluator(model_config)(messages=one_turn, query="q", response="r"),
    "relevance_empty": lambda: RelevanceEvaluator(model_config)(messages=[]),
    "relevance_not_list": lambda: RelevanceEvaluator(model_config)(messages="hello"),
    "relevance_no_assistant": lambda: RelevanceEvaluator(model_config)(messages=[{"role": "user", "content": "hi"}]),
    "fluency_no_user": lambda: FluencyEvaluator(model_config)(messages=[{"role": "assistant", "content": "hi"}]),
    "fluency_bad_role": lambda: FluencyEvaluator(model_config)(messages=[{"role": "bot", "content": "hi"}]),
    "fluency_no_role": lambda: FluencyEvaluator(model_config)(messages=[{"content": "hi"}]),
    "fluency_item_not_dict": lambda: FluencyEvaluator(model_config)(messages=["hi"]),
    "retrieval_empty": lambda: RetrievalEvaluator(model_config)(messages=[]),
    "retrieval_no_assistant": lambda: RetrievalEvaluator(model_config)(messages=[{"role": "user", "content": "hi"}]),
    "completeness_empty": lambda: ResponseCompletenessEvaluator(model_config)(messages=[]),
    "coherence_messages": lambda: CoherenceEvaluator(model_config)(messages=one_turn),
}
for name, call in cases.items():
    try:
        out[name] = call()
    except EvaluationException as exc:
        out[name] = error_info(exc)
    except Exception as exc:
        out[name] = {"other_error": type(exc).__name__}
emit(out)
