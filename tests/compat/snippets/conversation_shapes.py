# mypy: ignore-errors
"""Conversations of unusual or wrong shapes: a system message, a trailing question, an assistant that
speaks first, two questions in a row, and inputs the SDK rejects (with its category and blame)."""
import os

from azure.ai.evaluation import CoherenceEvaluator, FluencyEvaluator, RelevanceEvaluator
from azure.ai.evaluation._exceptions import EvaluationException

from _emit import emit, error_info

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}


def U(text):
    return {"role": "user", "content": text}


def A(text):
    return {"role": "assistant", "content": text}


def S(text):
    return {"role": "system", "content": text}


coherence = CoherenceEvaluator(model_config)
fluency = FluencyEvaluator(model_config)
relevance = RelevanceEvaluator(model_config)
cases = {
    "system_first": lambda: coherence(conversation={"messages": [S("Be brief."), U("Hi [J1]"), A("Hello. [J5]"),
                                                                U("Bye"), A("Goodbye. [J2]")]}),
    "trailing_user": lambda: coherence(conversation={"messages": [U("Hi"), A("Hello. [J5]"), U("Bye"),
                                                                 A("Goodbye. [J3]"), U("Wait!")]}),
    "assistant_first": lambda: coherence(conversation={"messages": [A("Welcome! [J2]"), U("Hi"), A("Yes? [J4]"),
                                                                   U("Bye"), A("Goodbye. [J5]")]}),
    "two_questions": lambda: fluency(conversation={"messages": [U("Hi"), U("Anyone?"), A("Here. [J3]"),
                                                               U("Good"), A("Indeed. [J5]")]}),
    "only_user": lambda: relevance(conversation={"messages": [U("Hello?")]}),
    "no_messages_key": lambda: relevance(conversation={"context": "nothing"}),
    "messages_not_list": lambda: relevance(conversation={"messages": "Hi there"}),
    "missing_role": lambda: relevance(conversation={"messages": [{"content": "Hi"}, A("Hello")]}),
    "conversation_and_query": lambda: relevance(conversation={"messages": [U("Hi"), A("Hello")]}, query="Hi"),
    "empty_dict": lambda: fluency(conversation={}),
}
out = {}
for name, call in cases.items():
    try:
        out[name] = call()
    except EvaluationException as exc:
        out[name] = error_info(exc)
    except Exception as exc:  # a plain error from either library: only its type
        out[name] = {"error": type(exc).__name__}
emit(out)
