"""A row's inputs as a judge prompt shows them: texts as they are, an agent's messages rendered with
their tool calls and results (checked first against the compatible SDK's message format), several
answers numbered, a context's documents with their ids and titles."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from touchstone.data.kinds import as_text_list, context_documents
from touchstone.evaluators.agent.messages import Checker, preprocess, render_messages
from touchstone.evaluators.judge.prompts import format_answers, format_documents


def as_text(value: Any) -> str | None:
    """A query or response for a prompt: a string as is, an agent's messages as text (tool calls and
    their results included)."""
    if value is None or isinstance(value, str):
        return value
    return render_messages(preprocess(value))


def check_messages(metric: str, inputs: Mapping[str, Any]) -> None:
    """An agent's query or response given as messages must be in the compatible SDK's message format
    (roles, content items, tool calls with ids): the SDK's checks and messages."""
    for name in ("query", "response"):
        value = inputs.get(name)
        if isinstance(value, list):
            problem = Checker(metric).messages_problem(value, name.capitalize(), name)
            if problem is not None:
                raise problem


def context_block(context: Any) -> str:
    """Context for a prompt: a string as is, documents with their ids and titles."""
    if isinstance(context, str):
        return context
    return format_documents(context_documents(context))


def prompt_text(kind: str, value: Any) -> str | None:
    """The text a prompt shows for an input of ``kind`` (an :class:`~touchstone.evaluators.base.InputSpec`
    kind): ``messages`` rendered (:func:`as_text`), ``texts`` numbered (several ground truths),
    ``context`` as documents; any other kind as given. None stays None (an absent optional input)."""
    if value is None:
        return None
    if kind == "messages":
        return as_text(value)
    if kind == "texts":
        return format_answers(as_text_list(value))
    if kind == "context":
        return context_block(value)
    return value  # type: ignore[no-any-return]


def is_empty(kind: str, value: Any) -> bool:
    """Whether an input gives a judge nothing to read: a text that is blank, a context with nothing
    in it."""
    if kind == "context":
        return not value
    return value is None or (isinstance(value, str) and not value.strip())
