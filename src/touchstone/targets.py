"""Targets: the application under test, as a Python callable or an HTTP endpoint (SPEC 2.3, 3.6).

One target serves two callers:

- the simulators and the red-team runner talk to it through the compatible SDK's async callback
  protocol: declared ``async def target(messages, stream=False, session_state=None, context=None)``
  and called ``await target(messages, session_state=...)`` as the SDK calls it, where
  ``messages`` is ``{"messages": [{"role", "content"}, ...], "template_parameters": {...}}``, and the
  reply is a dict whose ``messages`` list ends with the assistant's message (``{"role": "assistant",
  "content": ..., "context": ...}``), optionally with ``session_state`` and ``context`` beside it;
- ``evaluate(target=...)`` calls it once per row with the row's fields and reads a dict
  (``{"response": ..., "context": ...}``), through :func:`row_target`.

The forms: a Python callable (an SDK callback, used as it is), :class:`ChatTarget` (an
OpenAI-compatible ``/chat/completions`` endpoint: the conversation is sent, the first choice's
content is the reply), and :class:`JsonPostTarget` (a JSON POST whose body is a template with
``{query}``-style placeholders, and whose reply is read at a dotted path such as ``answer`` or
``data.choices.0.text``). :func:`make_target` builds one from a command-line spec
(``module:function`` or a URL). Credentials in a URL or in headers never appear in errors or
descriptions.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import os
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from touchstone._redact import redact_url, redact_urls
from touchstone.errors import ConfigurationError

Callback = Callable[..., Awaitable[Mapping[str, Any]]]
"""An async target in the SDK's callback protocol."""

TARGET_KEY_ENV = "TOUCHSTONE_TARGET_API_KEY"
"""An API key for HTTP targets built from the command line."""

DEFAULT_TIMEOUT = 60.0
"""Seconds an HTTP target may take to answer one message."""


class TargetError(RuntimeError):
    """A target failed to answer (it raised, returned something unusable, or its endpoint failed)."""


class TargetTimeout(TargetError):
    """A target took longer than its timeout to answer."""


# --------------------------------------------------------------------------------------- replies
def reply_of(result: Any) -> tuple[str, Any]:
    """The assistant's reply (content, context) in a callback's result, as the SDK reads it: the
    content of the last message of ``result["messages"]``; its ``context`` (else the result's)."""
    if not isinstance(result, Mapping):
        got = type(result).__name__
        raise TargetError(f"the target must return a dict with 'messages', it returned {got}")
    messages = result.get("messages")
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)) or not messages:
        raise TargetError("the target's reply has no 'messages' list ending with the assistant's message")
    last = messages[-1]
    if not isinstance(last, Mapping) or not isinstance(last.get("content"), str):
        raise TargetError("the last message of the target's reply has no string 'content'")
    context = last.get("context", result.get("context"))
    return last["content"], context


def _reply(messages: Mapping[str, Any], content: str, context: Any, session_state: Any) -> dict[str, Any]:
    """A callback result in the SDK's shape: the conversation with the assistant's message appended."""
    msgs = [dict(m) for m in messages.get("messages", [])]
    msgs.append({"role": "assistant", "content": content, "context": context})
    return {"messages": msgs, "stream": False, "session_state": session_state, "context": context}


def _chat_messages(messages: Any) -> list[dict[str, str]]:
    if isinstance(messages, Mapping):
        messages = messages.get("messages", [])
    return [
        {"role": str(m.get("role", "user")), "content": str(m.get("content", ""))}
        for m in messages
        if isinstance(m, Mapping)
    ]


def _last_user(messages: Sequence[Mapping[str, str]]) -> str:
    users = [m["content"] for m in messages if m.get("role") == "user"]
    return users[-1] if users else ""


# --------------------------------------------------------------------------------------- HTTP
class HttpTarget:
    """Base of the HTTP targets: the URL (credentials redacted when shown), headers, timeout."""

    def __init__(
        self, url: str, *, headers: Mapping[str, str] | None = None, timeout: float = DEFAULT_TIMEOUT
    ) -> None:
        if not url.startswith(("http://", "https://")):
            shown = redact_url(url)
            raise ConfigurationError(f"target URL must start with http:// or https://, got {shown!r}")
        if not timeout > 0:
            raise ConfigurationError(f"target timeout must be a positive number of seconds, got {timeout!r}")
        self.url = url
        self.headers = dict(headers or {})
        self.timeout = float(timeout)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({redact_url(self.url)!r})"

    @property
    def name(self) -> str:
        """How the target is shown and recorded (no credentials)."""
        return redact_url(self.url)

    async def _post(self, body: Any) -> Any:
        import httpx

        try:
            async with httpx.AsyncClient(timeout=self.timeout) as client:
                response = await client.post(self.url, json=body, headers=self.headers)
        except httpx.TimeoutException:
            raise TargetTimeout(f"{self.name} did not answer within {self.timeout:g} s") from None
        except httpx.HTTPError as exc:
            raise TargetError(f"{self.name}: {redact_urls(str(exc)) or type(exc).__name__}") from None
        if response.status_code >= 400:
            raise TargetError(f"{self.name} answered HTTP {response.status_code}: {response.text[:200]!r}")
        try:
            return response.json()
        except ValueError:
            raise TargetError(f"{self.name} did not answer with JSON: {response.text[:200]!r}") from None

    async def respond(self, messages: list[dict[str, str]], fields: Mapping[str, Any]) -> tuple[str, Any]:
        """The reply (content, context) to a conversation whose row fields are ``fields``."""
        raise NotImplementedError

    async def __call__(
        self,
        messages: Mapping[str, Any],
        stream: bool = False,
        session_state: Any = None,
        context: Any = None,
    ) -> dict[str, Any]:
        """The SDK's callback protocol."""
        chat = _chat_messages(messages)
        content, reply_context = await self.respond(chat, {"query": _last_user(chat), "context": context})
        return _reply(messages, content, reply_context, session_state)

    async def for_row(self, **row: Any) -> dict[str, Any]:
        """``evaluate(target=...)``: the row's ``query`` (or its ``messages``) sent; ``response`` (and
        ``context`` when the endpoint gives one) returned."""
        if isinstance(row.get("messages"), list):
            chat = _chat_messages(row["messages"])
        else:
            chat = [{"role": "user", "content": str(row.get("query", ""))}]
        content, context = await self.respond(chat, row)
        out: dict[str, Any] = {"response": content}
        if context is not None:
            out["context"] = context
        return out


class ChatTarget(HttpTarget):
    """An OpenAI-compatible chat endpoint: the conversation is POSTed as ``messages`` (with ``model``
    when given) to ``url`` (``.../chat/completions`` is appended to a base URL that lacks it); the
    reply is ``choices[0].message.content``."""

    def __init__(
        self,
        url: str,
        *,
        model: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        api_key: str | None = None,
    ) -> None:
        url = url.rstrip("/")
        if not url.endswith("/chat/completions"):
            url += "/chat/completions"
        merged = dict(headers or {})
        if api_key:
            merged.setdefault("Authorization", f"Bearer {api_key}")
        super().__init__(url, headers=merged, timeout=timeout)
        self.model = model

    async def respond(self, messages: list[dict[str, str]], fields: Mapping[str, Any]) -> tuple[str, Any]:
        body: dict[str, Any] = {"messages": messages}
        if self.model:
            body["model"] = self.model
        data = await self._post(body)
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise TargetError(f"{self.name}: the reply has no choices[0].message.content") from None
        if not isinstance(content, str):
            raise TargetError(f"{self.name}: choices[0].message.content is not a string")
        return content, data["choices"][0]["message"].get("context")


class JsonPostTarget(HttpTarget):
    """A JSON POST endpoint. ``body`` is a JSON template whose string values may hold placeholders:
    ``{query}`` (the last user message), ``{messages}`` (the conversation, as JSON when it is the
    whole value) or any field of the row; ``response_path`` is the dotted path of the reply in the
    answer (``answer``, ``data.items.0.text``); ``context_path`` optionally one for its context."""

    def __init__(
        self,
        url: str,
        *,
        body: str | Mapping[str, Any] = '{"query": "{query}"}',
        response_path: str = "response",
        context_path: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(url, headers=headers, timeout=timeout)
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except ValueError as exc:
                raise ConfigurationError(f"target body template is not valid JSON: {exc}") from None
        if not isinstance(body, (Mapping, list)):
            raise ConfigurationError("target body template must be a JSON object or array")
        if not response_path.strip():
            raise ConfigurationError("target response path is empty; expected e.g. 'answer' or 'data.text'")
        self.body = body
        self.response_path = response_path
        self.context_path = context_path

    async def respond(self, messages: list[dict[str, str]], fields: Mapping[str, Any]) -> tuple[str, Any]:
        values = {k: v for k, v in fields.items() if v is not None}
        values["query"] = _last_user(messages) or values.get("query", "")
        values["messages"] = messages
        data = await self._post(fill_template(self.body, values))
        content = read_path(data, self.response_path, self.name)
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        context = read_path(data, self.context_path, self.name) if self.context_path else None
        return content, context


def fill_template(template: Any, values: Mapping[str, Any]) -> Any:
    """``template`` with ``{name}`` placeholders in its strings replaced by ``values``; a string that
    is one placeholder alone takes the value itself (a list stays a list). Unknown names are an error."""
    if isinstance(template, Mapping):
        return {k: fill_template(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [fill_template(v, values) for v in template]
    if not isinstance(template, str):
        return template
    stripped = template.strip()
    if stripped.startswith("{") and stripped.endswith("}") and stripped[1:-1].isidentifier():
        key = stripped[1:-1]
        if key not in values:
            raise TargetError(f"target body placeholder {{{key}}} has no value (fields: {sorted(values)})")
        return values[key]

    def text(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)

    try:
        return template.format_map({k: text(v) for k, v in values.items()})
    except (KeyError, ValueError, IndexError) as exc:
        raise TargetError(f"target body template {template!r}: no value for {exc}") from None


def read_path(data: Any, path: str, name: str = "target") -> Any:
    """The value at a dotted path (``a.b.0.c``: keys, and list indices as integers)."""
    value = data
    for part in path.split("."):
        if isinstance(value, Mapping) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.lstrip("-").isdigit() and -len(value) <= int(part) < len(value):
            value = value[int(part)]
        else:
            raise TargetError(f"{name}: the reply has nothing at {path!r} (stopped at {part!r})")
    return value


# --------------------------------------------------------------------------------------- building
def load_callable(spec: str) -> Callable[..., Any]:
    """``module:function`` (or ``path/to/file.py:function``) imported; the current directory is on
    the import path, as for ``python -m``."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ConfigurationError(f"target {spec!r}: expected a URL or module:function")
    try:
        if module_name.endswith(".py"):
            loaded = importlib.util.spec_from_file_location(os.path.basename(module_name)[:-3], module_name)
            if loaded is None or loaded.loader is None:
                raise ImportError(f"cannot load {module_name}")
            module = importlib.util.module_from_spec(loaded)
            loaded.loader.exec_module(module)
        else:
            if os.getcwd() not in sys.path:
                sys.path.insert(0, os.getcwd())
            module = importlib.import_module(module_name)
    except (ImportError, OSError, SyntaxError) as exc:
        raise ConfigurationError(f"target {spec!r}: cannot import {module_name}: {exc}") from None
    fn: Any = module
    for part in attr.split("."):
        fn = getattr(fn, part, None)
    if not callable(fn):
        raise ConfigurationError(f"target {spec!r}: {module_name} has no callable {attr!r}")
    return fn  # type: ignore[no-any-return]


def make_target(
    spec: str,
    *,
    body: str | None = None,
    response_path: str | None = None,
    context_path: str | None = None,
    model: str | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Any:
    """A target from the command line's spec: a URL is a :class:`JsonPostTarget` when a body or a
    response path is given, else a :class:`ChatTarget`; anything else is ``module:function``.
    ``$TOUCHSTONE_TARGET_API_KEY``, when set, is sent to an HTTP target as ``Authorization: Bearer``
    (a key never goes on the command line, where it would reach shell history and process lists)."""
    if spec.startswith(("http://", "https://")):
        key = os.environ.get(TARGET_KEY_ENV)
        if key:
            headers = {"Authorization": f"Bearer {key}", **(headers or {})}
        if body is not None or response_path is not None or context_path is not None:
            return JsonPostTarget(
                spec,
                body=body if body is not None else '{"query": "{query}"}',
                response_path=response_path or "response",
                context_path=context_path,
                headers=headers,
                timeout=timeout,
            )
        return ChatTarget(spec, model=model, headers=headers, timeout=timeout)
    if body is not None or response_path is not None:
        raise ConfigurationError("--target-body and --target-response-path apply to an HTTP target URL only")
    return load_callable(spec)


def describe_target(target: Any) -> str:
    """A name for a target, fit for results and logs (no credentials)."""
    if isinstance(target, HttpTarget):
        return f"{type(target).__name__} {target.name}"
    name = getattr(target, "__qualname__", None) or type(target).__qualname__
    module = getattr(target, "__module__", None)
    return f"{module}.{name}" if module and module != "__main__" else str(name)


def row_target(target: Any) -> Callable[..., Any]:
    """What ``evaluate(target=...)`` calls per row: an HTTP target (or its URL) answers the row's
    query; any other callable is returned as it is (the SDK's row function)."""
    if isinstance(target, str):
        target = make_target(target)
    if isinstance(target, HttpTarget):
        http = target

        async def call(**row: Any) -> dict[str, Any]:
            return await http.for_row(**row)

        call.__qualname__ = describe_target(http)
        return call
    if not callable(target):
        raise ConfigurationError(f"target must be a callable or an http(s) URL, got {type(target).__name__}")
    return target  # type: ignore[no-any-return]


def _is_async(fn: Any) -> bool:
    """A coroutine function, or an object whose ``__call__`` is one (an HTTP target)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__)


async def call_target(
    target: Callable[..., Any],
    messages: Mapping[str, Any],
    *,
    session_state: Any = None,
    context: Any = None,
    timeout: float | None = None,
) -> tuple[str, Any, dict[str, Any]]:
    """Call ``target`` in the callback protocol (a synchronous callable runs in a thread), within
    ``timeout`` seconds; the reply's content, context and the whole result. Raises
    :class:`TargetTimeout` or :class:`TargetError` (whatever the target itself raised is wrapped)."""

    async def once() -> Any:
        # as the SDK calls it: the conversation and the session state only, so a callback declared
        # (messages, session_state=None) works as well as the full (messages, stream, session_state, context)
        kwargs: dict[str, Any] = {"session_state": session_state}
        if context is not None:
            kwargs["context"] = context
        if _is_async(target):
            return await target(messages, **kwargs)
        result = await asyncio.to_thread(target, messages, **kwargs)
        return await result if inspect.isawaitable(result) else result

    try:
        result = await (asyncio.wait_for(once(), timeout) if timeout else once())
    except asyncio.TimeoutError:  # not the built-in TimeoutError before Python 3.11
        raise TargetTimeout(f"the target did not answer within {timeout:g} s") from None
    except TargetError:
        raise
    except Exception as exc:  # the application's own failure: recorded, not fatal
        text = redact_urls(str(exc).strip())
        raise TargetError(f"{type(exc).__name__}: {text}" if text else type(exc).__name__) from exc
    content, reply_context = reply_of(result)
    return content, reply_context, dict(result)
