"""``POST /api/feedback``: production feedback events into the store, one event per request or many.

The body is one event object, a list of them, or ``{"events": [...]}`` as JSON (validated by
:mod:`touchstone.people.feedback`). A malformed request is answered with a clear 4xx and a JSON body
``{"error": ..., "field": ...}``: 400 (not JSON), 401 (missing or wrong bearer token, when the app
has one), 413 (larger than :data:`MAX_BODY`), 415 (not ``application/json``), 422 (an invalid field,
named as ``events[3].kind``). A 201 ``{"accepted": n}`` is sent only once the events are committed.

Production clients send one event per request, so this is the dashboard's busiest endpoint and the
one whose per-request cost matters. It is a plain ASGI endpoint (no request object, no dependency
solving, no thread hop per request) placed first among the routes, and its writes are group
commits (:class:`GroupWriter`): every request that arrives while a transaction is being written
waits for the next one, so one commit serves many requests and nothing is acknowledged before it is
durable.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from touchstone._redact import redact_urls
from touchstone.people import feedback as fb
from touchstone.store.base import Store
from touchstone.ui.safety import json_bytes

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]

MAX_BODY = 1 << 20
"""Largest feedback request body accepted (bytes): 1,000 events of about a kilobyte."""

PATH = "/api/feedback"

log = logging.getLogger(__name__)


class GroupWriter:
    """Writes feedback events in group commits: requests that arrive while a write is in progress
    wait for the next one, which writes all of them in one transaction (one commit for many
    requests, instead of one each). A request is answered only once its events are committed; when
    the transaction fails, every request of its group gets the error."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.pending: list[tuple[list[fb.FeedbackEvent], asyncio.Future[int]]] = []
        self.running = False
        self.task: asyncio.Task[None] | None = None
        # One thread of its own: writes are serial anyway (one group at a time), and handing a group to
        # it costs a fifth of anyio's run_in_threadpool, which showed as 20% of the endpoint's time.
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="feedback-writer")

    async def write(self, events: list[fb.FeedbackEvent]) -> int:
        """Write ``events`` (with whatever else is waiting); returns how many of them were written."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        self.pending.append((events, future))
        if not self.running:
            self.running = True
            self.task = loop.create_task(self._drain())  # held: the loop keeps only a weak reference
        return await future

    async def _drain(self) -> None:
        try:
            while self.pending:
                group, self.pending = self.pending, []
                everything = [e for events, _ in group for e in events]
                try:
                    await asyncio.get_running_loop().run_in_executor(
                        self.executor, fb.record_feedback, self.store, everything)
                except Exception as exc:  # every request of the group learns of it
                    for _, future in group:
                        if not future.done():
                            future.set_exception(exc)
                    continue
                for events, future in group:
                    if not future.done():
                        future.set_result(len(events))
        finally:
            self.running = False


class Rejected(Exception):
    """A request answered with a 4xx: its status, the message and the field at fault."""

    def __init__(self, status: int, message: str, field: str, headers: tuple[tuple[bytes, bytes], ...] = ()):
        super().__init__(message)
        self.status, self.message, self.field, self.headers = status, message, field, headers


def _header(scope: Scope, name: bytes) -> bytes:
    for key, value in scope.get("headers") or ():
        if key.lower() == name:
            return bytes(value)
    return b""


def check_token(scope: Scope, token: str | None) -> None:
    """Raise :class:`Rejected` (401) unless the request carries ``Authorization: Bearer <token>``
    (when a token is set). The comparison takes the same time whatever the guess."""
    if not token:
        return
    scheme, _, value = _header(scope, b"authorization").partition(b" ")
    if scheme.lower() != b"bearer" or not hmac.compare_digest(value.strip(), token.encode()):
        raise Rejected(401, "missing or wrong bearer token (Authorization: Bearer <token>)", "authorization",
                       ((b"www-authenticate", b"Bearer"),))


async def read_json(scope: Scope, receive: Receive) -> Any:
    """The request's JSON body; raises :class:`Rejected` (415, 413, 400) saying what is wrong."""
    kind = _header(scope, b"content-type").split(b";")[0].strip().lower().decode("latin-1")
    if kind != "application/json":
        raise Rejected(415, f"send the body as application/json (got {kind or 'no content type'!r})",
                       "content-type")
    declared = _header(scope, b"content-length")
    if declared.isdigit() and int(declared) > MAX_BODY:  # refused before reading it
        raise Rejected(413, f"the body is {int(declared)} bytes; at most {MAX_BODY}", "body")
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise Rejected(400, "the client went away before sending the whole body", "body")
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_BODY:
            raise Rejected(413, f"the body is over {MAX_BODY} bytes", "body")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    try:
        return json.loads(b"".join(chunks))
    except (ValueError, UnicodeDecodeError) as exc:
        raise Rejected(400, f"the body is not valid JSON: {exc}", "body") from None
    except RecursionError:  # "[[[[...": the decoder's own limit, not a server error
        raise Rejected(400, "the body is not valid JSON: nested too deeply", "body") from None


async def respond(send: Send, status: int, content: Any,
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    """A JSON response (escaped as every JSON answer of the dashboard, see :func:`json_bytes`)."""
    body = json_bytes(content)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class FeedbackEndpoint:
    """The ASGI endpoint of ``POST /api/feedback`` over ``store`` (see the module's docstring)."""

    def __init__(self, store: Store, token: str | None = None) -> None:
        self.writer = GroupWriter(store)
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            check_token(scope, self.token)
            body = await read_json(scope, receive)
            try:
                events = fb.parse_events(body)
            except fb.FeedbackError as exc:
                raise Rejected(422, str(exc), exc.field) from None
        except Rejected as no:
            await respond(send, no.status, {"error": no.message, "field": no.field}, no.headers)
            return
        try:
            count = await self.writer.write(events)
        except Exception as exc:  # the client learns that nothing was stored, not why
            log.error("feedback events could not be stored: %s: %s", type(exc).__name__,
                      redact_urls(str(exc)))
            await respond(send, 503, {"error": "the events could not be stored; nothing was accepted, "
                                               "send them again", "field": None})
            return
        await respond(send, 201, {"accepted": count})


__all__ = ["MAX_BODY", "PATH", "FeedbackEndpoint", "GroupWriter", "Rejected", "check_token", "read_json"]
