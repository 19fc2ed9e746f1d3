"""A fake OpenAI-compatible server: real HTTP/1.1 on 127.0.0.1, for tests and benchmarks.

Speaks ``POST /v1/chat/completions`` (messages, ``response_format``, ``logprobs``/``top_logprobs``,
``n``, ``usage``), ``POST /v1/embeddings``, ``POST /v1/completions`` (``echo`` + ``logprobs`` only) and
``GET /v1/models``, the Azure OpenAI paths
(``/openai/deployments/<name>/chat/completions?api-version=...``), and Anthropic's Messages API
(``POST /v1/messages``: ``model``, top-level ``system``, ``messages``, ``max_tokens``, ``temperature``;
replies and errors in Anthropic's shapes, requests the real API would reject answered with its 400s).
Each test scripts it with a function from request to reply (the same handler serves both APIs), and
injects faults: fixed or random latency, a concurrency cap answered with 429 and Retry-After,
500/502/503 (and 529 "overloaded" when asked for), requests that hang past the client's timeout,
dropped connections, malformed JSON, replies that violate the requested schema, and errors such as 401.

In tests use the ``fake_openai`` fixture (``tests/conftest.py``). Alone, for benchmarks::

    python -m tests.fakes.openai_server --port 8123 --latency 0.2 --max-concurrency 64
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import math
import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

FAULT_KINDS = ("429", "500", "502", "503", "hang", "drop", "malformed", "schema")
"""The kinds a :class:`FaultPlan` draws from by default. ``"529"`` (Anthropic's "overloaded") may also
be named in ``FaultPlan.kinds``; it is not a default, so default plans inject what they always did."""

ANTHROPIC_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
"""Anthropic's ``error.type`` for each HTTP status (other 5xx are ``api_error``)."""

_MESSAGES_FIELDS = frozenset({
    "model", "messages", "max_tokens", "system", "temperature", "top_p", "top_k", "stop_sequences",
    "stream", "metadata", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers",
})


@dataclass
class FakeRequest:
    """One request as the handler sees it."""

    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    attempt: int
    """How many times this exact body has been received, this one included (1 = first)."""

    @property
    def api(self) -> str:
        """``"anthropic"`` for the Messages API, else ``"openai"``."""
        return "anthropic" if _is_messages_path(self.path) else "openai"

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages") or [])

    @property
    def system(self) -> str:
        """The system prompt: Anthropic's top-level ``system``, else the OpenAI system messages joined."""
        if self.api == "anthropic":
            return content_text(self.body.get("system") or "")
        return "\n".join(
            content_text(m.get("content", "")) for m in self.messages if m.get("role") == "system"
        )

    @property
    def prompt(self) -> str:
        """All message contents joined (handy for matching); Anthropic's ``system`` comes first."""
        texts = [content_text(m.get("content", "")) for m in self.messages]
        if self.api == "anthropic" and self.body.get("system"):
            texts.insert(0, self.system)
        return "\n".join(texts)

    @property
    def last_user(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return content_text(users[-1].get("content", "")) if users else ""

    @property
    def json_schema(self) -> dict[str, Any] | None:
        """The schema the reply must follow: OpenAI's ``json_schema`` response format, or llama.cpp's
        ``json_object`` with a ``schema`` beside it."""
        fmt = self.body.get("response_format") or {}
        if fmt.get("type") == "json_schema":
            return dict((fmt.get("json_schema") or {}).get("schema") or {})
        if fmt.get("type") == "json_object" and isinstance(fmt.get("schema"), dict):
            return dict(fmt["schema"])
        return None

    @property
    def response_format(self) -> str | None:
        """The ``response_format`` type sent (``json_schema``, ``json_object``, ``text``), or None."""
        fmt = self.body.get("response_format")
        return str(fmt.get("type")) if isinstance(fmt, dict) else None

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))


@dataclass
class Reply:
    """What the server answers. ``content`` (one text, or one per choice) for a completion; or an
    error ``status`` with ``error`` message; ``raw`` bytes to send verbatim; ``action`` ``"hang"`` or
    ``"drop"``; optional explicit ``logprobs`` ``[(token, logprob, [(alt, logprob), ...]), ...]``."""

    content: str | list[str] | None = None
    status: int = 200
    error: str | None = None
    error_code: str | None = None
    error_param: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes | None = None
    action: str | None = None
    logprobs: list[tuple[str, float, list[tuple[str, float]]]] | None = None
    latency: float | None = None
    usage: tuple[int, int] | None = None


@dataclass
class Recorded:
    """A request the server received and how it answered."""

    path: str
    body: dict[str, Any]
    attempt: int
    status: int | None
    fault: str | None
    key: str
    headers: dict[str, str] = field(default_factory=dict)
    """The request's headers, names in lower case."""
    query: str = ""
    """The query string of the request's URL (e.g. ``api-version=...`` on the Azure paths)."""


@dataclass
class FaultPlan:
    """Deterministic fault injection: a share ``rate`` of the distinct request bodies (chosen by a
    hash with ``seed``) fail on their first ``attempts`` attempts, with a kind from ``kinds``."""

    rate: float = 0.0
    kinds: tuple[str, ...] = FAULT_KINDS
    attempts: int = 1
    seed: int = 0

    def fault_for(self, key: str, attempt: int) -> str | None:
        if self.rate <= 0 or attempt > self.attempts or not self.kinds:
            return None
        h = int(hashlib.sha256(f"{self.seed}|{key}".encode()).hexdigest()[:12], 16)
        if (h % 1_000_000) / 1_000_000 >= self.rate:
            return None
        k = int(hashlib.sha256(f"{self.seed}|{key}|{attempt}".encode()).hexdigest()[:8], 16)
        return self.kinds[k % len(self.kinds)]


Handler = Callable[[FakeRequest], "Reply | str | dict[str, Any] | None"]
RawAnswer = tuple[int, bytes, dict[str, str], str | None, float]
"""What the HTTP layer sends: status, body, headers, an action (``hang``/``drop``) and a delay."""


def schema_instance(schema: dict[str, Any], *, prefer: int = 4, root: dict[str, Any] | None = None) -> Any:
    """A plausible value matching a JSON schema: integers near ``prefer`` within their bounds; local
    ``$ref``s (``#/$defs/...``, ``#/definitions/...``) are followed."""
    root = schema if root is None else root
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target.get(part, {}) if isinstance(target, dict) else {}
        return schema_instance(target, prefer=prefer, root=root)
    if "allOf" in schema and len(schema["allOf"]) == 1:
        return schema_instance(schema["allOf"][0], prefer=prefer, root=root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if "enum" in schema:
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    if kind == "object" or "properties" in schema:
        return {
            k: schema_instance(v, prefer=prefer, root=root)
            for k, v in (schema.get("properties") or {}).items()
        }
    if kind == "array":
        return [schema_instance(schema.get("items") or {"type": "string"}, prefer=prefer, root=root)]
    if kind in ("integer", "number"):
        lo = schema.get("minimum", -math.inf)
        hi = schema.get("maximum", math.inf)
        value = min(max(prefer, lo), hi)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    if kind == "string":
        return "Let's think step by step: the response is supported by the context."
    return None


_SCHEMA_IN_PROMPT = re.compile(r"JSON[ _-]?Schema[^{]{0,80}", re.IGNORECASE)


def prompt_schema(prompt: str) -> dict[str, Any] | None:
    """A JSON schema spelled out in the prompt ("... complies with the following JSON Schema: {...}"),
    as prompt-only structured-output libraries (ragas, for one) write it; None if there is none."""
    match = _SCHEMA_IN_PROMPT.search(prompt)
    if match is None:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(prompt, match.end())
    except ValueError:
        return None
    return value if isinstance(value, dict) and ("properties" in value or "type" in value) else None


def judge_handler(request: FakeRequest) -> str:
    """Default reply of a judge: an instance of the requested schema (``response_format``, or a JSON
    schema written out in the prompt), else a JSON object with the usual judge keys (``reason``,
    ``score``, ``status``...) that both touchstone's and the compatible
    SDK's parsers accept."""
    schema = request.json_schema or prompt_schema(request.prompt)
    if schema is not None:
        return json.dumps(schema_instance(schema))
    return json.dumps(
        {
            "reason": "Let's think step by step: the response is supported by the context.",
            "explanation": "The response is supported by the context.",
            "score": 4,
            "status": "completed",
        }
    )


def fake_embedding(text: str, dim: int = 8) -> list[float]:
    """A deterministic unit vector for ``text``."""
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    raw = [(digest[i % len(digest)] - 127.5) / 127.5 for i in range(dim)]
    norm = math.sqrt(sum(x * x for x in raw)) or 1.0
    return [x / norm for x in raw]


def content_text(content: Any) -> str:
    """The text of a message's ``content``: a string, or a list of content blocks / parts
    (``{"type": "text", "text": ...}``, as both APIs allow) whose texts are joined."""
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) if isinstance(b, dict) else str(b) for b in content)
    return str(content)


def _is_messages_path(path: str) -> bool:
    return path.endswith("/v1/messages")


def _tokens(text: str) -> list[str]:
    return re.findall(r"\w+|[^\w\s]|\s+", text) or [text]


class FakeOpenAIServer:
    """The server. ``start()`` runs it on a background thread (tests); ``serve_forever()`` in the
    foreground (benchmarks). Attributes may be changed between requests: ``handler``, ``latency``,
    ``latency_jitter``, ``max_concurrency``, ``faults``, ``supports_json_schema``, ``supports_logprobs``,
    ``rejected_formats``, ``retry_after``, ``hang_seconds``.

    ``supports_json_schema=False`` answers ``json_schema`` requests with a 400 naming
    ``response_format`` (as OpenAI-compatible servers without structured output do);
    ``rejected_formats`` names ``response_format`` types answered as llama-cpp-python's server
    answers the ones it does not take: HTTP 500 with the validation error as the message
    (``{"json_schema"}`` is that server; add ``"json_object"`` for one that takes neither)."""

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        handler: Handler | None = None,
        latency: float = 0.0,
        latency_jitter: float = 0.0,
        max_concurrency: int | None = None,
        retry_after: float = 0.05,
        faults: FaultPlan | None = None,
        supports_json_schema: bool = True,
        supports_logprobs: bool = True,
        rejected_formats: frozenset[str] | set[str] = frozenset(),
        hang_seconds: float = 30.0,
        embedding_dim: int = 8,
        seed: int = 0,
    ) -> None:
        self.host = host
        self.port = port
        self.handler: Handler = handler or judge_handler
        self.latency = latency
        self.latency_jitter = latency_jitter
        self.max_concurrency = max_concurrency
        self.retry_after = retry_after
        self.faults = faults or FaultPlan()
        self.supports_json_schema = supports_json_schema
        self.supports_logprobs = supports_logprobs
        self.rejected_formats = frozenset(rejected_formats)
        self.hang_seconds = hang_seconds
        self.embedding_dim = embedding_dim
        self.rng = random.Random(seed)
        self.requests: list[Recorded] = []
        self.active = 0
        self.max_active = 0
        self.rejected_busy = 0
        self._attempts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._server: asyncio.base_events.Server | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._ready = threading.Event()

    # ------------------------------------------------------------------ addresses and counters
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>/v1``: the ``base_url`` of an OpenAI configuration."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def endpoint(self) -> str:
        """``http://127.0.0.1:<port>``: the ``azure_endpoint`` of an Azure configuration."""
        return f"http://{self.host}:{self.port}"

    @property
    def count(self) -> int:
        """Requests received (every attempt, every endpoint)."""
        return len(self.requests)

    def count_path(self, suffix: str) -> int:
        return sum(1 for r in self.requests if r.path.endswith(suffix))

    @property
    def faults_injected(self) -> int:
        return sum(1 for r in self.requests if r.fault)

    def reset(self) -> None:
        """Forget recorded requests and attempt counts."""
        with self._lock:
            self.requests.clear()
            self._attempts.clear()
            self.max_active = 0
            self.rejected_busy = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> FakeOpenAIServer:
        """Serve on a background thread; returns once the port is bound."""
        self._thread = threading.Thread(target=self._thread_main, name="fake-openai", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fake OpenAI server did not start")
        return self

    def _thread_main(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        asyncio.set_event_loop(loop)
        loop.run_until_complete(self._bind())
        self._ready.set()
        try:
            loop.run_forever()
        finally:
            loop.close()

    async def _bind(self) -> None:
        self._server = await asyncio.start_server(self._connection, self.host, self.port, backlog=1024)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def stop(self) -> None:
        """Stop serving; hanging requests are cut."""
        loop = self._loop
        if loop is None or self._thread is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self._shutdown(), loop)
        with contextlib.suppress(Exception):
            fut.result(10)
        loop.call_soon_threadsafe(loop.stop)
        self._thread.join(10)
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def serve_forever(self) -> None:
        """Serve in the current event loop until cancelled."""
        await self._bind()
        assert self._server is not None
        async with self._server:
            await self._server.serve_forever()

    # ------------------------------------------------------------------ HTTP
    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        try:
            while True:
                try:
                    head = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                    return
                lines = head.decode("latin-1").split("\r\n")
                method, target, _ = ([*lines[0].split(" ", 2), "", ""])[:3]
                headers: dict[str, str] = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                length = int(headers.get("content-length", "0") or 0)
                raw = await reader.readexactly(length) if length else b""
                keep = await self._respond(method, target, headers, raw, writer)
                if not keep:
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            return  # a client went away, or the server is stopping
        finally:
            if task is not None:
                self._tasks.discard(task)
            with contextlib.suppress(Exception):
                writer.close()

    def _write(
        self, writer: asyncio.StreamWriter, status: int, payload: bytes, headers: dict[str, str]
    ) -> None:
        reason = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                  429: "Too Many Requests", 500: "Internal Server Error", 502: "Bad Gateway",
                  503: "Service Unavailable", 529: "Overloaded"}.get(status, "Status")
        head = [f"HTTP/1.1 {status} {reason}", "content-type: application/json",
                f"content-length: {len(payload)}", "connection: keep-alive"]
        head += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)

    @staticmethod
    def _error_body(
        message: str, code: str | None = None, param: str | None = None, kind: str = "invalid_request_error"
    ) -> bytes:
        return json.dumps(
            {"error": {"message": message, "type": kind, "param": param, "code": code}}
        ).encode()

    @staticmethod
    def _anthropic_error(status: int, message: str, kind: str | None = None) -> bytes:
        """An error body in Anthropic's shape: ``{"type": "error", "error": {"type", "message"}}``."""
        kind = (
            kind
            or ANTHROPIC_ERROR_TYPES.get(status)
            or ("api_error" if status >= 500 else "invalid_request_error")
        )
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()

    async def _respond(
        self, method: str, target: str, headers: dict[str, str], raw: bytes, writer: asyncio.StreamWriter
    ) -> bool:
        url = urlsplit(target)
        path, query = url.path, url.query
        anthropic = _is_messages_path(path)
        if method == "GET" and path.endswith("/models"):
            self._write(
                writer,
                200,
                json.dumps({"object": "list", "data": [{"id": "fake-judge", "object": "model"}]}).encode(),
                {},
            )
            await writer.drain()
            return True
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            payload = (
                self._anthropic_error(400, "request body is not JSON")
                if anthropic
                else self._error_body("request body is not JSON")
            )
            self._write(writer, 400, payload, {})
            await writer.drain()
            return True
        if "/deployments/" in path:  # Azure: the deployment is the model
            body.setdefault("model", path.split("/deployments/", 1)[1].split("/", 1)[0])
        key = hashlib.sha256(
            json.dumps({"p": path.rsplit("/", 1)[-1], "b": body}, sort_keys=True).encode()
        ).hexdigest()
        with self._lock:
            attempt = self._attempts[key] = self._attempts.get(key, 0) + 1
        record = Recorded(path, body, attempt, None, None, key, headers, query)
        with self._lock:
            self.requests.append(record)

        # concurrency cap: answered at once, before any work
        if self.max_concurrency is not None and self.active >= self.max_concurrency:
            self.rejected_busy += 1
            record.status, record.fault = 429, None
            ra = self.retry_after
            if anthropic:  # Anthropic advertises the wait in retry-after only (here in decimal seconds)
                self._write(
                    writer,
                    429,
                    self._anthropic_error(
                        429, "Number of concurrent connections has exceeded your rate limit."
                    ),
                    {"retry-after": f"{ra:g}"},
                )
            else:
                self._write(
                    writer,
                    429,
                    self._error_body(
                        "Too many concurrent requests", "rate_limit_exceeded", kind="rate_limit_error"
                    ),
                    {"retry-after-ms": str(int(ra * 1000)), "retry-after": str(max(1, math.ceil(ra)))},
                )
            await writer.drain()
            return True
        self.active += 1
        self.max_active = max(self.max_active, self.active)
        try:
            status, payload, extra, action, delay = self._answer(path, body, headers, attempt, key, record)
            if delay > 0:
                await asyncio.sleep(delay)
            if action == "hang":
                await asyncio.sleep(self.hang_seconds)
                return False
        finally:
            self.active -= 1
        if action == "drop":
            writer.transport.abort()
            return False
        record.status = status
        self._write(writer, status, payload, extra)
        await writer.drain()
        return True

    def _answer(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        attempt: int,
        key: str,
        record: Recorded,
    ) -> tuple[int, bytes, dict[str, str], str | None, float]:
        delay = self.latency + (self.rng.uniform(0, self.latency_jitter) if self.latency_jitter else 0.0)
        fault = self.faults.fault_for(key, attempt)
        record.fault = fault
        if _is_messages_path(path):
            return self._messages_answer(path, body, headers, attempt, fault, delay)
        if fault == "529":
            return 529, self._error_body("The server is overloaded", kind="server_error"), {}, None, delay
        if fault in ("500", "502", "503"):
            return int(fault), self._error_body("injected server error", kind="server_error"), {}, None, delay
        if fault == "429":
            return (
                429,
                self._error_body("Rate limit reached", "rate_limit_exceeded", kind="rate_limit_error"),
                {"retry-after-ms": str(int(self.retry_after * 1000))},
                None,
                0.0,
            )
        if fault in ("hang", "drop"):
            return 0, b"", {}, fault, delay if fault == "drop" else 0.0
        if fault == "malformed":
            return (
                200,
                b'{"id": "chatcmpl-x", "choices": [{"index": 0, "message": {"content": "trunc',
                {},
                None,
                delay,
            )

        request = FakeRequest("POST", path, headers, body, attempt)
        if path.endswith("/embeddings"):
            return (*self._embeddings(body), None, delay)
        if path.endswith("/completions") and not path.endswith("/chat/completions"):
            return (*text_completions(body), None, delay)
        if not path.endswith("/chat/completions"):
            return 404, self._error_body(f"unknown path {path}", "not_found"), {}, None, 0.0
        fmt = request.response_format
        if fmt in self.rejected_formats:
            return 500, llama_cpp_format_error(fmt), {}, None, 0.0
        if fmt == "json_schema" and not self.supports_json_schema:
            return 400, self._error_body("response_format json_schema is not supported by this server",
                                         param="response_format"), {}, None, 0.0
        if (body.get("logprobs") or body.get("top_logprobs")) and not self.supports_logprobs:
            return 400, self._error_body("logprobs are not supported", param="logprobs"), {}, None, 0.0

        reply, delay, early = self._scripted(fault, request, delay)
        if early is not None:
            return early
        if reply.status != 200:
            payload = self._error_body(
                reply.error or f"HTTP {reply.status}",
                reply.error_code,
                reply.error_param,
                "server_error" if reply.status >= 500 else "invalid_request_error",
            )
            return reply.status, payload, reply.headers, None, delay
        return 200, self._completion(body, reply), reply.headers, None, delay

    def _scripted(
        self, fault: str | None, request: FakeRequest, delay: float
    ) -> tuple[Reply, float, RawAnswer | None]:
        """The handler's reply (or the injected schema violation), its latency, and the raw answer to
        send at once for a hang, a dropped connection or verbatim bytes (else None)."""
        if fault == "schema":
            result: Reply | str | dict[str, Any] | None = Reply(
                content='{"verdict": "not what you asked for"}'
            )
        else:
            result = self.handler(request)
        reply = _as_reply(result)
        if reply.latency is not None:
            delay = reply.latency
        if reply.action in ("hang", "drop"):
            return reply, delay, (0, b"", {}, reply.action, delay if reply.action == "drop" else 0.0)
        if reply.raw is not None:
            return reply, delay, (reply.status, reply.raw, reply.headers, None, delay)
        return reply, delay, None

    def _completion(self, body: dict[str, Any], reply: Reply) -> bytes:
        n = int(body.get("n") or 1)
        contents = reply.content if isinstance(reply.content, list) else [reply.content or ""] * n
        prompt_chars = sum(len(str(m.get("content", ""))) for m in body.get("messages") or [])
        choices = []
        for i, text in enumerate(
            contents[:n] if len(contents) >= n else contents + [contents[-1]] * (n - len(contents))
        ):
            choice: dict[str, Any] = {"index": i, "message": {"role": "assistant", "content": text},
                                      "finish_reason": "stop", "logprobs": None}
            if body.get("logprobs"):
                top_n = int(body.get("top_logprobs") or 0)
                if reply.logprobs is not None:
                    items = reply.logprobs
                else:
                    items = [(t, -0.01, [(t, -0.01)]) for t in _tokens(text)]
                choice["logprobs"] = {
                    "content": [
                        {
                            "token": t,
                            "logprob": lp,
                            "bytes": list(t.encode()),
                            "top_logprobs": [
                                {"token": a, "logprob": alp, "bytes": list(a.encode())}
                                for a, alp in top[:top_n]
                            ],
                        }
                        for t, lp, top in items
                    ]
                }
            choices.append(choice)
        completion = sum(max(1, len(c) // 4) for c in contents[:n])
        usage = reply.usage or (max(1, prompt_chars // 4), completion)
        return json.dumps(
            {
                "id": f"chatcmpl-{self.rng.getrandbits(48):x}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": choices,
                "usage": {
                    "prompt_tokens": usage[0],
                    "completion_tokens": usage[1],
                    "total_tokens": usage[0] + usage[1],
                },
            }
        ).encode()

    # ------------------------------------------------------------------ Anthropic Messages API
    def _messages_answer(
        self,
        path: str,
        body: dict[str, Any],
        headers: dict[str, str],
        attempt: int,
        fault: str | None,
        delay: float,
    ) -> tuple[int, bytes, dict[str, str], str | None, float]:
        """``POST /v1/messages``: the same faults and handler as chat completions, Anthropic's shapes."""
        err = self._anthropic_error
        if fault in ("500", "502", "503"):
            return int(fault), err(int(fault), "Internal server error"), {}, None, delay
        if fault == "529":
            return 529, err(529, "Overloaded"), {}, None, delay
        if fault == "429":
            return 429, err(429, "This request would exceed the rate limit for your organization."), {
                "retry-after": f"{self.retry_after:g}"}, None, 0.0
        if fault in ("hang", "drop"):
            return 0, b"", {}, fault, delay if fault == "drop" else 0.0
        if fault == "malformed":
            return (
                200,
                b'{"id": "msg_x", "type": "message", "content": [{"type": "text", "text": "trunc',
                {},
                None,
                delay,
            )
        problem = messages_problem(body, headers)
        if problem is not None:
            return problem[0], err(problem[0], problem[1]), {}, None, 0.0

        reply, delay, early = self._scripted(fault, FakeRequest("POST", path, headers, body, attempt), delay)
        if early is not None:
            return early
        if reply.status != 200:
            return (
                reply.status,
                err(reply.status, reply.error or f"HTTP {reply.status}", reply.error_code),
                reply.headers,
                None,
                delay,
            )
        text = reply.content[0] if isinstance(reply.content, list) else (reply.content or "")
        prompt_chars = len(content_text(body.get("system") or "")) + sum(
            len(content_text(m.get("content", ""))) for m in body.get("messages") or [])
        usage = reply.usage or (max(1, prompt_chars // 4), max(1, len(text) // 4))
        message = {
            "id": f"msg_{self.rng.getrandbits(96):024x}",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
        }
        return 200, json.dumps(message).encode(), {"request-id": f"req_{self.rng.getrandbits(64):016x}",
                                                   **reply.headers}, None, delay

    def _embeddings(self, body: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
        inputs = body.get("input")
        texts = [inputs] if isinstance(inputs, str) else list(inputs or [])
        data = [{"object": "embedding", "index": i, "embedding": fake_embedding(str(t), self.embedding_dim)}
                for i, t in enumerate(texts)]
        tokens = sum(max(1, len(str(t)) // 4) for t in texts)
        return 200, json.dumps({"object": "list", "data": data, "model": body.get("model", "fake-embed"),
                                "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}).encode(), {}


def llama_cpp_format_error(kind: str) -> bytes:
    """The HTTP 500 body llama-cpp-python's server sends for a ``response_format`` type it does not
    take: its route handler wraps the request model's validation error as an internal server error."""
    message = (
        "1 validation error for CreateChatCompletionRequest\nresponse_format.type\n"
        "  Input should be 'text' or 'json_object' "
        f"[type=literal_error, input_value='{kind}', input_type=str]"
        if kind == "json_schema"
        else f"Unsupported response_format type: {kind}"
    )
    return json.dumps({"error": {"message": message, "type": "internal_server_error", "param": None,
                                 "code": None}}).encode()


def fake_token_logprob(token: str) -> float:
    """A deterministic log-probability in [-5, -0.05] for ``token`` (legacy completions)."""
    return -0.05 - (int(hashlib.sha256(token.encode("utf-8")).hexdigest()[:6], 16) % 496) / 100


def text_completions(body: dict[str, Any]) -> tuple[int, bytes, dict[str, str]]:
    """``POST /v1/completions`` with ``echo`` and ``logprobs`` (prompt log-probabilities, as vLLM and
    the legacy OpenAI API return them): each prompt is tokenised by ``_tokens``; the first token has no
    log-probability (``None``), the others ``fake_token_logprob``. Nothing is generated."""
    if not body.get("echo") or body.get("logprobs") is None:
        err = {
            "error": {
                "message": "this fake only echoes prompts: set echo and logprobs",
                "type": "invalid_request_error",
            }
        }
        return 400, json.dumps(err).encode(), {}
    prompt = body.get("prompt")
    prompts = [prompt] if isinstance(prompt, str) else list(prompt or [])
    choices: list[dict[str, Any]] = []
    for i, text in enumerate(prompts):
        tokens = _tokens(str(text)) if text else []
        offsets = [sum(len(t) for t in tokens[:k]) for k in range(len(tokens))]
        logprobs = [None if k == 0 else fake_token_logprob(t) for k, t in enumerate(tokens)]
        choices.append({"text": text, "index": i, "finish_reason": "length",
                        "logprobs": {"tokens": tokens, "token_logprobs": logprobs, "top_logprobs": None,
                                     "text_offset": offsets}})
    used = sum(len(c["logprobs"]["tokens"]) for c in choices)
    return (
        200,
        json.dumps(
            {
                "id": "cmpl-fake",
                "object": "text_completion",
                "created": int(time.time()),
                "model": body.get("model", "fake"),
                "choices": choices,
                "usage": {"prompt_tokens": used, "completion_tokens": 0, "total_tokens": used},
            }
        ).encode(),
        {},
    )


def messages_problem(body: dict[str, Any], headers: dict[str, str]) -> tuple[int, str] | None:
    """Why Anthropic's Messages API would reject this request (status, message), or None."""
    if not headers.get("x-api-key") and not headers.get("authorization"):
        return 401, "x-api-key header is required"
    if not headers.get("anthropic-version"):
        return 400, "anthropic-version: header is required"
    extra = sorted(set(body) - _MESSAGES_FIELDS)
    if extra:
        return 400, f"{extra[0]}: Extra inputs are not permitted"
    if body.get("stream"):
        return 400, "stream: this fake server does not stream"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return 400, "model: Field required"
    max_tokens = body.get("max_tokens")
    if max_tokens is None:
        return 400, "max_tokens: Field required"
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return 400, "max_tokens: Input should be greater than or equal to 1"
    temperature = body.get("temperature")
    if temperature is not None and (
        not isinstance(temperature, (int, float)) or not 0.0 <= temperature <= 1.0
    ):
        return 400, "temperature: range: 0..1"
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        return 400, "system: Input should be a valid string or list of text blocks"
    return _messages_list_problem(body.get("messages"))


def _messages_list_problem(messages: Any) -> tuple[int, str] | None:
    """Why the Messages API would reject the ``messages`` field, or None."""
    if not isinstance(messages, list):
        return 400, "messages: Field required"
    if not messages:
        return 400, "messages: at least one message is required"
    for i, m in enumerate(messages):
        role = m.get("role") if isinstance(m, dict) else None
        if role == "system":
            return 400, ('messages: Unexpected role "system". The Messages API accepts a top-level `system` '
                         'parameter, not "system" as an input message role.')
        if role not in ("user", "assistant"):
            return 400, f"messages.{i}.role: Input should be 'user' or 'assistant'"
        if not isinstance(m.get("content"), (str, list)):
            return 400, f"messages.{i}.content: Field required"
    return None


def _as_reply(result: Reply | str | dict[str, Any] | None) -> Reply:
    if isinstance(result, Reply):
        return result
    if isinstance(result, dict):
        return Reply(content=json.dumps(result))
    return Reply(content="" if result is None else str(result))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8123)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds per request")
    parser.add_argument("--latency-jitter", type=float, default=0.0, help="extra random seconds, uniform")
    parser.add_argument("--max-concurrency", type=int, default=None, help="429 beyond this many in flight")
    parser.add_argument("--retry-after", type=float, default=0.05, help="seconds advertised with a 429")
    parser.add_argument("--fault-rate", type=float, default=0.0)
    parser.add_argument("--no-json-schema", action="store_true", help="reject response_format json_schema")
    parser.add_argument(
        "--reject-format",
        action="append",
        default=[],
        choices=["json_schema", "json_object"],
        help="answer this response_format type with llama-cpp-python's HTTP 500 (repeatable)",
    )
    args = parser.parse_args(argv)
    server = FakeOpenAIServer(
        host=args.host,
        port=args.port,
        latency=args.latency,
        latency_jitter=args.latency_jitter,
        max_concurrency=args.max_concurrency,
        retry_after=args.retry_after,
        faults=FaultPlan(rate=args.fault_rate),
        supports_json_schema=not args.no_json_schema,
        rejected_formats=frozenset(args.reject_format),
    )

    async def run() -> None:
        task = asyncio.ensure_future(server.serve_forever())
        while server._server is None:
            await asyncio.sleep(0.01)
        print(f"fake OpenAI server on {server.base_url}", flush=True)
        await task

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run())


if __name__ == "__main__":
    main()
