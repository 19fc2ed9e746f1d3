"""The compatible SDK's typed dicts, under the private path its users import them from
(``azure.ai.evaluation._model_configurations``); all of them are exported by :mod:`touchstone` too.

They are ``TypedDict`` s: calling one builds a plain ``dict`` (``Message(role="user",
content="hi")`` is ``{"role": "user", "content": "hi"}``), so they document shapes for a type
checker and cost nothing at run time. The model configurations are defined with the judges
(:mod:`touchstone.judges.config`), which read and check them when a judge is first used.
"""

from __future__ import annotations

from typing import Any, TypedDict

from touchstone.judges.config import AzureOpenAIModelConfiguration, OpenAIModelConfiguration

__all__ = [
    "AzureAIProject",
    "AzureOpenAIModelConfiguration",
    "Conversation",
    "EvaluatorConfig",
    "Message",
    "OpenAIModelConfiguration",
]


class AzureAIProject(TypedDict):
    """An Azure AI project (subscription, resource group, project name). touchstone uploads nothing:
    passing one to ``evaluate()`` or an evaluator is accepted and ignored, with one warning."""

    subscription_id: str
    resource_group_name: str
    project_name: str


class EvaluatorConfig(TypedDict, total=False):
    """One evaluator's settings in ``evaluate(evaluator_config={name: ...})``: ``column_mapping``
    maps an evaluator input to ``${data.<column>}`` or ``${target.<output>}``."""

    column_mapping: dict[str, str]


# Optional keys through a total=False subclass: ``NotRequired`` is not in Python 3.10's typing.
class _MessageKeys(TypedDict):
    role: str
    content: str | list[dict[str, Any]]


class Message(_MessageKeys, total=False):
    """One message of a conversation: ``role`` (``user``, ``assistant``, ``system``, ``tool``),
    ``content`` (text, or a list of content parts), optional ``context``."""

    context: Any


class _ConversationKeys(TypedDict):
    messages: list[Message] | list[dict[str, Any]]


class Conversation(_ConversationKeys, total=False):
    """A conversation as evaluators take it: ``messages`` and an optional global ``context``."""

    context: Any
