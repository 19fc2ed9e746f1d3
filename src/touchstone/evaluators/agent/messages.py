"""Agent messages in the compatible SDK's format: checking them, normalising them, and writing them as
text for a judge.

A message is ``{"role": ..., "content": ...}`` where ``content`` is a string or a list of typed items:
``{"type": "text", "text": ...}`` (also ``input_text``/``output_text``), a tool call
``{"type": "tool_call", "tool_call_id": ..., "name": ..., "arguments": {...}}`` in an assistant
message, and a tool result ``{"type": "tool_result", "tool_result": ...}`` in a ``tool`` message that
names the call it answers (``tool_call_id``). The Responses API's spellings (``function_call``,
``function_call_output``, ``openapi_call``, ``openapi_call_output``) are accepted and read as tool calls
and results; MCP approval requests and responses are protocol chatter and are dropped before judging.

A tool definition is ``{"name": ..., "description"?: ..., "parameters": {JSON schema}}``, or an OpenAPI
tool ``{"type": "openapi", "functions": [definitions]}``.

The checks raise :class:`AgentInputError` with the compatible SDK's messages, so code that shows them
to a user reads the same.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

from touchstone.errors import InputValidationError, Problem

TEXT_TYPES = ("text", "input_text", "output_text")
CALL_TYPES = ("tool_call", "function_call", "openapi_call", "mcp_approval_request")
RESULT_TYPES = ("tool_result", "function_call_output", "openapi_call_output", "mcp_approval_response")
INTERMEDIATE = "Intermediate response. Please provide the agent's final response for evaluation."
"""The compatible SDK's reason for not judging an agent that has not finished (its last message is a
pending call)."""
USER_ROLES = ("user", "system", "developer")

BUILT_IN_TOOLS: dict[str, tuple[str, dict[str, Any]]] = {
    "code_interpreter": (
        "Runs generated code to read data files, compute results and draw charts.",
        {"type": "object", "properties": {"input": {"type": "string", "description": "the code to run"}}},
    ),
    "bing_grounding": (
        "Searches the web and returns pages to ground the answer in.",
        {
            "type": "object",
            "properties": {"requesturl": {"type": "string", "description": "the search request"}},
        },
    ),
    "bing_custom_search": (
        "Searches a configured subset of web sites.",
        {
            "type": "object",
            "properties": {"requesturl": {"type": "string", "description": "the search request"}},
        },
    ),
    "file_search": (
        "Searches uploaded files; one call may return several results.",
        {
            "type": "object",
            "properties": {
                "ranking_options": {
                    "type": "object",
                    "properties": {"ranker": {"type": "string"}, "score_threshold": {"type": "number"}},
                }
            },
        },
    ),
    "azure_ai_search": (
        "Searches an Azure AI Search index.",
        {"type": "object", "properties": {"input": {"type": "string", "description": "the search terms"}}},
    ),
    "sharepoint_grounding": (
        "Searches SharePoint document libraries.",
        {"type": "object", "properties": {"input": {"type": "string", "description": "the question"}}},
    ),
    "fabric_dataagent": (
        "Asks a Microsoft Fabric data agent for data.",
        {"type": "object", "properties": {"input": {"type": "string", "description": "the question"}}},
    ),
}
"""Hosted tools an agent may call without the caller defining them: their definitions are supplied
(as the compatible SDK does) so that calls to them can be judged."""


class AgentInputError(InputValidationError):
    """An agent evaluator's input is not in the expected message format (nothing was sent to a
    judge). The message is the compatible SDK's; ``field`` names the input."""

    error_kind = "input"

    def __init__(self, metric: str, field: str | None, message: str) -> None:
        super().__init__([Problem(metric, None, field, message)])
        self.field = field
        self.reason = message


# ------------------------------------------------------------------------------ checks
class Checker:
    """The compatible SDK's input checks for one evaluator (``metric`` names it in errors)."""

    def __init__(self, metric: str) -> None:
        self.metric = metric

    def fail(self, field: str | None, message: str) -> AgentInputError:
        return AgentInputError(self.metric, field, message)

    def messages_problem(self, value: Any, name: str, field: str) -> AgentInputError | None:
        """A query or response: a non-empty string or a non-empty list of valid messages."""
        if value is None:
            return self.fail(field, f"{name} is a required input and cannot be None.")
        if isinstance(value, str):
            return self.fail(field, f"{name} string cannot be empty.") if value == "" else None
        if not isinstance(value, list):
            return self.fail(field, f"{name} must be a string or a list of messages.")
        if not value:
            return self.fail(field, f"{name} list cannot be empty.")
        if not all(isinstance(m, Mapping) for m in value):
            return self.fail(field, f"Each message in the {name.lower()} list must be a dictionary.")
        for message in value:
            problem = self.message_problem(message)
            if problem:
                return self.fail(field, problem)
        return None

    def message_problem(self, message: Mapping[str, Any]) -> str | None:
        if "role" not in message:
            return "Each message must contain a 'role' field."
        if "content" not in message:
            return "Each message must contain a 'content' field."
        role, content = message["role"], message["content"]
        if not (
            isinstance(content, str)
            or (isinstance(content, list) and all(item and isinstance(item, Mapping) for item in content))
        ):
            return "The 'content' field must be a string or a list of dictionaries messages."
        if len(content) == 0:
            return "The 'content' field can't be empty."
        if isinstance(content, str):
            return None
        if not all("type" in item for item in content):
            return "Each content item in the 'content' list must contain a 'type' field."
        if role in USER_ROLES:
            return _user_items_problem(content, str(role))
        if role == "assistant":
            return _assistant_items_problem(content)
        if role == "tool":
            return _tool_message_problem(message, content)
        return None

    def tool_definitions_problem(self, value: Any, *, required: bool) -> AgentInputError | None:
        if not value:
            if required:
                return self.fail("tool_definitions", "Tool definitions input is required but not provided.")
            return None
        if isinstance(value, str):
            return None
        if not isinstance(value, list):
            return self.fail(
                "tool_definitions", "Tool definitions must be provided as a list of dictionaries."
            )
        for definition in value:
            if not isinstance(definition, Mapping):
                return self.fail("tool_definitions", "Each tool definition must be a dictionary.")
            if definition.get("type") == "openapi":
                functions = definition.get("functions")
                if "functions" not in definition:
                    return self.fail(
                        "tool_definitions", "Each openapi tool definition must contain a 'functions' field."
                    )
                if not isinstance(functions, list):
                    return self.fail(
                        "tool_definitions", "The 'functions' field must be a list in openapi tool definition."
                    )
                for function in functions:
                    problem = _definition_problem(function)
                    if problem:
                        return self.fail("tool_definitions", problem)
            else:
                problem = _definition_problem(definition)
                if problem:
                    return self.fail("tool_definitions", problem)
        return None

    def tool_calls_problem(self, value: Any) -> AgentInputError | None:
        if not value:
            return self.fail("tool_calls", "No tool calls found in response or provided tool_calls.")
        if isinstance(value, str):
            return None
        if not isinstance(value, list):
            return self.fail("tool_calls", "Tool calls must be provided as a list of dictionaries.")
        for call in value:
            if not call or not isinstance(call, Mapping):
                return self.fail("tool_calls", "Each tool call must be a dictionary.")
            problem = tool_call_problem(call)
            if problem:
                return self.fail("tool_calls", problem)
        return None

    def conversation_problem(self, value: Any) -> AgentInputError | None:
        if not isinstance(value, Mapping):
            return self.fail("conversation", "Conversation must be a dictionary.")
        if "messages" not in value:
            return self.fail("conversation", "Each Conversation must contain a 'messages' field.")
        if not isinstance(value["messages"], list):
            return self.fail("conversation", "The 'messages' field must be a list in Conversation.")
        return self.messages_problem(value["messages"], "Conversation messages", "conversation")


def _user_items_problem(content: Sequence[Mapping[str, Any]], role: str) -> str | None:
    for item in content:
        if item["type"] not in ("text", "input_text"):
            return (
                f"Invalid content type '{item['type']}' for message with role '{role}'. "
                "Must be 'text' or 'input_text'."
            )
        problem = _text_item_problem(item, role)
        if problem:
            return problem
    return None


ASSISTANT_TYPES = [
    "text",
    "output_text",
    "tool_call",
    "function_call",
    "mcp_approval_request",
    "openapi_call",
]


def _assistant_items_problem(content: Sequence[Mapping[str, Any]]) -> str | None:
    for item in content:
        kind = item["type"]
        if kind not in ASSISTANT_TYPES:
            return (
                f"Invalid content type '{kind}' for message with role 'assistant'. "
                f"Must be one of {ASSISTANT_TYPES}."
            )
        if kind in ("text", "output_text"):
            problem = _text_item_problem(item, "assistant")
        elif kind in ("tool_call", "function_call", "openapi_call"):
            problem = tool_call_problem(item)
        else:
            problem = None
        if problem:
            return problem
    return None


def _text_item_problem(item: Mapping[str, Any], role: str) -> str | None:
    if "text" not in item:
        return f"Each content item must contain a 'text' field for message with role '{role}'."
    if not isinstance(item["text"], str):
        return "The 'text' field must be a string in content items."
    return None


def tool_call_problem(item: Mapping[str, Any]) -> str | None:
    """What is wrong with one tool call content item, or None."""
    if item.get("type") not in CALL_TYPES:
        return f"The content item must be of type {list(CALL_TYPES)} in tool_call content item."
    if item["type"] == "mcp_approval_request":
        return None
    for name, kind, word in (
        ("name", str, "a string"),
        ("arguments", Mapping, "a dictionary"),
        ("tool_call_id", str, "a string"),
    ):
        if name not in item:
            return f"Each tool_call content items must contain a '{name}' field."
        if not isinstance(item[name], kind):
            return f"The '{name}' field must be {word} in tool_call content items."
    return None


def _tool_message_problem(message: Mapping[str, Any], content: Any) -> str | None:
    where = "content items for role 'tool'"
    if not isinstance(content, list):
        return "The 'content' field must be a list of dictionaries messages for role 'tool'."
    if "tool_call_id" not in message:
        return f"Each {where} must contain a 'tool_call_id' field."
    if not isinstance(message["tool_call_id"], str):
        return f"The 'tool_call_id' field must be a string in {where}."
    for item in content:
        kind = item["type"]
        if kind not in RESULT_TYPES:
            return (
                f"Invalid content type '{kind}' for message with role 'tool'. "
                f"Must be one of {list(RESULT_TYPES)}."
            )
        if kind != "mcp_approval_response" and kind not in item:
            return f"Each {where} must contain a '{kind}' field."
    return None


def _definition_problem(definition: Any) -> str | None:
    if not isinstance(definition, Mapping):
        return "Each tool definition must be a dictionary."
    if "name" not in definition:
        return "Each tool definitions must contain a 'name' field."
    if not isinstance(definition["name"], str):
        return "The 'name' field must be a string in tool definitions."
    if "parameters" not in definition:
        return "Each tool definitions must contain a 'parameters' field."
    if not isinstance(definition["parameters"], Mapping):
        return "The 'parameters' field must be a dictionary in tool definitions."
    return None


# ------------------------------------------------------------------------------ normalising
def preprocess(messages: Any) -> Any:
    """A copy of ``messages`` without MCP approval chatter and with the Responses API's call and
    output types read as ``tool_call``/``tool_result``; anything but a list is returned as is."""
    if not isinstance(messages, list):
        return messages
    kept = []
    for msg in copy.deepcopy(messages):
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list) and (
            (msg.get("role") == "assistant" and _has_type(content, "mcp_approval_request"))
            or (msg.get("role") == "tool" and _has_type(content, "mcp_approval_response"))
        ):
            continue
        if isinstance(content, list):
            for item in content:
                if isinstance(item, dict):
                    _normalise_item(item)
        kept.append(msg)
    return kept


def _has_type(content: Sequence[Any], kind: str) -> bool:
    return any(isinstance(c, Mapping) and c.get("type") == kind for c in content)


def _normalise_item(item: dict[str, Any]) -> None:
    kind = item.get("type")
    if kind == "function_call":
        item["type"] = "tool_call"
        if "function_call" in item:
            item["tool_call"] = item.pop("function_call")
    elif kind == "openapi_call":
        item["type"] = "tool_call"
    elif kind in ("function_call_output", "openapi_call_output"):
        item["type"] = "tool_result"
        if kind in item:
            item["tool_result"] = item.pop(kind)


def is_intermediate(response: Any) -> bool:
    """Whether the agent has not finished: its last message is an assistant message whose last item
    is a call still waiting for its result or for an approval."""
    if not isinstance(response, list) or not response:
        return False
    last = response[-1]
    if not isinstance(last, Mapping) or last.get("role") != "assistant":
        return False
    content = last.get("content")
    if not isinstance(content, list) or not content:
        return False
    item = content[-1]
    return isinstance(item, Mapping) and item.get("type") in ("function_call", "mcp_approval_request")


def tool_calls_in(response: Any) -> list[dict[str, Any]]:
    """The tool calls of a list of messages (copies), each with the ``tool_result`` of the tool
    message that answers it, when there is one."""
    if not isinstance(response, list):
        return []
    calls: list[dict[str, Any]] = []
    results: dict[Any, Any] = {}
    for msg in response:
        if not isinstance(msg, Mapping):
            continue
        content = msg.get("content")
        if msg.get("role") == "assistant" and isinstance(content, list):
            calls.extend(
                copy.deepcopy(dict(c))
                for c in content
                if isinstance(c, Mapping) and c.get("type") == "tool_call"
            )
        elif msg.get("role") == "tool" and msg.get("tool_call_id") and isinstance(content, list) and content:
            first = content[0]
            if isinstance(first, Mapping) and first.get("type") == "tool_result":
                results[msg["tool_call_id"]] = first.get("tool_result")
    for call in calls:
        if call.get("tool_call_id") in results:
            call["tool_result"] = results[call["tool_call_id"]]
    return calls


def definitions_for(calls: Sequence[Any], definitions: Sequence[Any]) -> list[dict[str, Any]] | None:
    """The definitions to show the judge (the caller's, plus those of called hosted tools), or None
    when a called tool has no definition (the call cannot be judged)."""
    needed: list[dict[str, Any]] = [dict(d) for d in definitions if isinstance(d, Mapping)]
    for call in calls:
        name = call.get("name") if isinstance(call, Mapping) else None
        if isinstance(call, Mapping) and call.get("type") == "tool_call" and name in BUILT_IN_TOOLS:
            description, parameters = BUILT_IN_TOOLS[name]
            built_in = {"type": name, "name": name, "description": description, "parameters": parameters}
            if built_in not in needed:
                needed.append(built_in)
    known: set[str] = set()
    for d in needed:
        functions = d.get("functions") if d.get("type") == "openapi" else None
        for f in functions if isinstance(functions, list) and functions else [d]:
            if isinstance(f, Mapping) and isinstance(f.get("name"), str):
                known.add(f["name"])
    for call in calls:
        if not isinstance(call, Mapping) or call.get("type") != "tool_call" or not call.get("name"):
            return None
        if call["name"] not in known:
            return None
    return needed


# ------------------------------------------------------------------------------ text for the judge
def content_text(content: Any) -> str:
    """The text of a message's content (a string, or the text items of a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(c.get("text", "")) for c in content if isinstance(c, Mapping) and c.get("type") in TEXT_TYPES
        )
    return "" if content is None else str(content)


def _json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def render_messages(messages: Any, *, tools: bool = True, system: bool = True) -> str:
    """Messages as text, one block per item: ``[user]``, ``[assistant]``, tool calls with their
    arguments and tool results (named by call id) when ``tools``; system and developer messages when
    ``system``. A string is returned as is."""
    if isinstance(messages, str):
        return messages
    if not isinstance(messages, list):
        return _json(messages)
    lines: list[str] = []
    for msg in messages:
        if not isinstance(msg, Mapping):
            continue
        role = str(msg.get("role", ""))
        content = msg.get("content")
        if role in ("system", "developer"):
            if system:
                lines.append(f"[{role}] {content_text(content)}")
            continue
        if role == "tool":
            if tools:
                for item in content if isinstance(content, list) else [content]:
                    result = item.get("tool_result") if isinstance(item, Mapping) else item
                    lines.append(f"[tool result for call {msg.get('tool_call_id', '?')}] {_json(result)}")
            continue
        text = content_text(content)
        if text:
            lines.append(f"[{role}] {text}")
        if tools and isinstance(content, list):
            for item in content:
                if isinstance(item, Mapping) and item.get("type") == "tool_call":
                    lines.append(_call_line(item))
    return "\n".join(lines)


def _call_line(item: Mapping[str, Any]) -> str:
    inner = item.get("tool_call")
    if isinstance(inner, Mapping) and isinstance(inner.get("function"), Mapping):
        name, args, call_id = (
            inner["function"].get("name", "?"),
            inner["function"].get("arguments"),
            inner.get("id"),
        )
    else:
        name, args, call_id = item.get("name", "?"), item.get("arguments"), item.get("tool_call_id")
    return f"[tool call {call_id or '?'}] {name}({_json(args if args is not None else {})})"


def render_tool_calls(calls: Any) -> str:
    """Tool calls (with their results) as text, one per line; a string as is."""
    if isinstance(calls, str):
        return calls
    lines = []
    for call in calls:
        line = _call_line(call)
        if "tool_result" in call:
            line += f"\n  result: {_json(call['tool_result'])}"
        lines.append(line)
    return "\n".join(lines)


def render_definitions(definitions: Any) -> str:
    """Tool definitions as JSON, one per line; a string as is."""
    if isinstance(definitions, str):
        return definitions
    items = definitions if isinstance(definitions, list) else [definitions]
    return "\n".join(_json(d) for d in items)


def split_system(query: Any) -> tuple[str, Any]:
    """The system and developer instructions of a query (joined) and the rest of its messages."""
    if not isinstance(query, list):
        return "", query
    system = [
        content_text(m.get("content"))
        for m in query
        if isinstance(m, Mapping) and m.get("role") in ("system", "developer")
    ]
    rest = [m for m in query if not (isinstance(m, Mapping) and m.get("role") in ("system", "developer"))]
    return "\n\n".join(s for s in system if s), rest
