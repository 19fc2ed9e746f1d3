"""Conversations (SPEC 2.2, 3.2): which exchanges of a chat are judged, and how their outputs combine.

Two ways of judging a conversation, chosen by the judge evaluator's ``conversation_mode``:

- ``"sdk"`` (the default), as the compatible SDK (azure-ai-evaluation 1.18) does it: the i-th user
  message is paired with the i-th assistant message (roles other than these two are ignored; with
  ``eval_last_turn`` only the last two messages are read), and each pair is scored exactly as a
  single row with the metric's own inputs -- ``query`` (the user's text), ``response`` (the
  assistant's), ``ground_truth`` (the assistant message's) and ``context``, the text of a mapping of
  the conversation's ``global_context``, the user message's ``query_context`` (when the metric reads
  a query) and the assistant message's ``response_context`` (when it reads a response).
- ``"history"``, touchstone's RAG-chat judging (SPEC 3.2): each assistant turn with the history
  before it, the user message(s) it answers and the documents retrieved for it, with the metric's
  conversation prompt (``_turn``).

Either way the outputs combine as the SDK combines them: one exchange gives that exchange's outputs
as they are; several give every per-turn output under ``evaluation_per_turn`` (``{key: [value per
turn]}``), each key whose per-turn values are all numbers (booleans included: ``m_passed`` becomes
the share of passing turns) aggregated -- the mean by default, ``conversation_aggregation`` ``"min"``
or ``"max"`` otherwise -- and every other key (``m_result``, ``m_reason``, ``m_status``,
``m_properties``) taken from the last turn. No exchange at all gives an empty dict.

touchstone adds ``m_turns_min`` (the lowest turn's score) and ``m_all_turns_passed`` (whether every
turn passed): a conversation is grounded only if all its replies are. They are a secondary Score, so
the summary reports their mean and pass rate beside the SDK's aggregate. The main Score holds the
SDK's values: ``m``, ``m_reason``, and ``passed`` as ``m_result`` says.

When a turn cannot be scored the conversation has no honest aggregate: the row gets ``m_error``
naming the turn, and the turns that did score stay visible in ``evaluation_per_turn``.

Long conversations are judged in bounded memory: a turn's history is a view of the conversation's
messages, made into text only when that turn is judged, and at most :data:`TURNS_IN_FLIGHT` turns
of one conversation are judged at a time (a conversation of 10,000 turns no longer holds 10,000
histories and prompts at once).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from touchstone.data.kinds import context_documents
from touchstone.errors import InputValidationError, Problem, RunAbortedError
from touchstone.evaluators.base import MetricInfo
from touchstone.scores import ErrorKind, Outcome, Score

CONVERSATION_MODES = ("sdk", "history")
"""``conversation_mode`` values: the SDK's pairs scored as single rows, or touchstone's turns with history."""

TURNS_IN_FLIGHT = 64
"""Most turns of one conversation judged at the same time: each holds its rendered prompt (with the
history, up to the whole conversation), so this bounds a long conversation's memory; the judge
session's own concurrency limit still applies across rows."""

HISTORY_CHAR_LIMIT = 32_000
"""Most characters of history a turn is judged with in ``"history"`` mode (about 8,000 tokens): the
most recent messages; a longer history would not fit a judge's context, and rendering every turn's
whole history makes a long conversation cost time and memory in the square of its length."""

SAMPLE_INPUT_LIMIT = 8_000
"""In ``"history"`` mode a turn's ``sample_input`` (the prompt it was judged with, kept in its
properties) holds the whole history: longer ones keep each message's start and end, so the outputs
of a conversation grow with its length, not with its length squared."""
SAMPLE_MESSAGE_KEEP = 1_000
"""Characters kept at each end of a message of a trimmed ``sample_input``."""

TURN_INPUTS = ("query", "response", "context", "ground_truth")
"""The single-row inputs an exchange of a conversation can give a metric."""

NOT_PROMOTED = (
    "_total_tokens",
    "_prompt_tokens",
    "_completion_tokens",
    "_finish_reason",
    "_sample_input",
    "_sample_output",
    "_model",
    "_details",
)
"""Per-turn keys with a non-numeric value that the SDK does not repeat at the top of the outputs."""


@dataclass
class Turn:
    """One assistant turn and what it is judged with (``conversation_mode="history"``)."""

    index: int
    """1-based number of the assistant turn."""
    response: str
    query: str | None
    documents: list[dict[str, Any]] = field(default_factory=list)
    ground_truth: str | None = None
    messages: Sequence[Mapping[str, Any]] = field(default=(), repr=False)
    """The conversation's messages (shared by all its turns, not copied)."""
    history_end: int = 0
    """The history is ``messages[:history_end]``."""

    @property
    def history(self) -> list[dict[str, str]]:
        """Every message before the user message(s) this turn answers, as role and content (built
        when asked for: a turn of a long conversation holds no copy of it)."""
        return [
            {"role": str(m.get("role")), "content": str(m.get("content", ""))}
            for m in self.messages[: self.history_end]
        ]

    @property
    def history_text(self) -> str | None:
        """The history as ``role: content`` paragraphs, the most recent :data:`HISTORY_CHAR_LIMIT`
        characters of it (whole messages, at least one), after a line saying how many earlier
        messages were left out; None when there is none."""
        if not self.history_end:
            return None
        parts: list[str] = []
        size = 0
        for m in reversed(self.messages[: self.history_end]):
            part = f"{m.get('role')}: {m.get('content', '')}"
            if parts and size + len(part) > HISTORY_CHAR_LIMIT:
                break
            parts.append(part)
            size += len(part) + 2
        parts.reverse()
        left_out = self.history_end - len(parts)
        if left_out:
            parts.insert(0, f"[{left_out} earlier messages left out]")
        return "\n\n".join(parts)



class ExchangeMetric(Protocol):
    """What this module reads of any metric whose exchanges it scores or renders: its names, inputs,
    threshold, and how it renders an outcome or a failure (an :class:`Evaluator` is one)."""

    @property
    def metric(self) -> str: ...

    @property
    def info(self) -> MetricInfo: ...

    @property
    def error_key(self) -> str: ...

    @property
    def threshold(self) -> float | None: ...

    def required_modes(self) -> tuple[tuple[str, ...], ...]: ...

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outcome: ...

    def as_outcome(self, value: Any) -> Outcome: ...


class TurnScorer(ExchangeMetric, Protocol):
    """What scoring a conversation needs of a metric, beyond :class:`ExchangeMetric`: how to judge
    one exchange as a single row (``_single``) or one turn with its history (``_turn``), and how the
    per-turn scores combine. A judge metric is one; this module never imports the judge metric
    (which imports this module to score conversations)."""

    @property
    def conversation_aggregation(self) -> str: ...

    @property
    def conversation_mode(self) -> str: ...

    @property
    def eval_last_turn(self) -> bool: ...

    async def _single(self, **inputs: Any) -> Outcome: ...

    async def _turn(self, turn: Turn) -> Outcome: ...


def _documents(value: Any, default_prefix: str) -> list[dict[str, Any]]:
    docs = context_documents(value)
    if isinstance(value, str):
        docs[0]["id"] = default_prefix
    return docs


def split_turns(conversation: Mapping[str, Any]) -> list[Turn]:
    """The assistant turns of ``conversation`` (``{"messages": [...], "context"?: ...}``), for
    ``conversation_mode="history"`` (see :func:`iter_turns`)."""
    return list(iter_turns(conversation))


def iter_turns(conversation: Mapping[str, Any]) -> Iterator[Turn]:
    """The assistant turns of ``conversation`` one by one, for ``conversation_mode="history"``.

    A turn's query is the user message(s) since the previous assistant turn (None when the assistant
    speaks first); its history is every message before those; its documents are the ones attached to
    the assistant message and to the user message(s) it answers, then the global context's."""
    messages: Sequence[Mapping[str, Any]] = conversation.get("messages") or []
    global_docs = (
        _documents(conversation.get("context"), "conversation-context") if conversation.get("context") else []
    )
    count = 0
    pending: list[int] = []  # indices of user messages since the last assistant turn
    for i, msg in enumerate(messages):
        role = msg.get("role")
        if role == "user":
            pending.append(i)
        elif role == "assistant":
            first = pending[0] if pending else i
            query = "\n\n".join(str(messages[j].get("content", "")) for j in pending) if pending else None
            docs: list[dict[str, Any]] = []
            for j in pending:
                if messages[j].get("context"):
                    docs.extend(_documents(messages[j]["context"], f"turn-{count + 1}-query-context"))
            if msg.get("context"):
                docs.extend(_documents(msg["context"], f"turn-{count + 1}-context"))
            docs.extend(global_docs)
            gt = msg.get("ground_truth")
            count += 1
            yield Turn(
                index=count,
                response=str(msg.get("content", "")),
                query=query,
                documents=docs,
                ground_truth=gt if isinstance(gt, str) and gt else None,
                messages=messages,
                history_end=first,
            )
            pending = []


def turn_input_names(evaluator: ExchangeMetric) -> frozenset[str]:
    """The single-row inputs a metric reads (every input of its modes other than ``conversation``,
    among :data:`TURN_INPUTS`): what each exchange of a conversation gives it in ``"sdk"`` mode."""
    names: set[str] = set()
    for mode in evaluator.required_modes():
        if "conversation" not in mode:
            names.update(mode)
    return frozenset(names) & frozenset(TURN_INPUTS)


def exchange_inputs(
    conversation: Mapping[str, Any], names: frozenset[str], *, last_turn: bool = False
) -> list[dict[str, Any]]:
    """The single-row inputs of each exchange of ``conversation``, as the compatible SDK derives them:
    the i-th user message with the i-th assistant message; ``context`` is the text (Python's ``str``)
    of ``{"global_context", "query_context", "response_context"}``, each present when non-empty and
    read (the query's context only when the metric reads ``query``, the response's when it reads
    ``response``). ``last_turn``: only the last two messages."""
    messages = [m for m in conversation.get("messages") or [] if isinstance(m, Mapping)]
    if last_turn and len(messages) > 1:
        messages = messages[-2:]
    users = [m for m in messages if m.get("role") == "user"]
    assistants = [m for m in messages if m.get("role") == "assistant"]
    global_context = conversation.get("context")
    rows: list[dict[str, Any]] = []
    for user, assistant in zip(users, assistants, strict=False):
        row: dict[str, Any] = {}
        if "query" in names:
            row["query"] = user.get("content", "")
        if "response" in names:
            row["response"] = assistant.get("content", "")
        if "context" in names:
            context: dict[str, Any] = {}
            if global_context:
                context["global_context"] = global_context
            if user.get("context") and "query" in names:
                context["query_context"] = user["context"]
            if assistant.get("context") and "response" in names:
                context["response_context"] = assistant["context"]
            row["context"] = str(context)
        if "ground_truth" in names:
            row["ground_truth"] = assistant.get("ground_truth", "")
        rows.append(row)
    return rows


MESSAGE_ROLES = ("user", "assistant", "system", "tool", "developer")
"""The roles a message of a bare ``messages=[...]`` argument may have (the SDK's list)."""


_NOT_IN_EXCHANGES = ("tool", "developer")


def bare_messages_problem(messages: Any) -> str | None:
    """Why ``messages`` (the SDK's bare ``messages=[...]`` argument) cannot be judged, as the SDK's
    checking evaluators (relevance, fluency) say it: a non-empty list of dicts, each with a known
    role, with at least one user and one assistant message. None when it can."""
    if not isinstance(messages, list):
        return "messages must be provided as a list of message dictionaries."
    if not messages:
        return "messages list must not be empty."
    roles: set[Any] = set()
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            return (
                f"Each item in 'messages' must be a dictionary, but item at index {index} is "
                f"{type(message).__name__}."
            )
        role = message.get("role")
        if role is None:
            return f"Each message must contain a 'role' key, but message at index {index} is missing it."
        if role not in MESSAGE_ROLES:
            return f"Invalid role {role!r} at message index {index}. Must be one of: {sorted(MESSAGE_ROLES)}."
        roles.add(role)
    for needed in ("user", "assistant"):
        if needed not in roles:
            return f"messages must contain at least one message with role {needed!r}."
    return None


def messages_as_conversation(inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` with a bare ``messages=[...]`` read as the SDK reads it, as a conversation: the
    messages become ``conversation["messages"]``, a ``context`` its global context, a
    ``tool_definitions`` its tool definitions, and a ``ground_truth`` is given to every assistant
    message that has none of its own (copies: the caller's messages are not changed). Tool and
    developer messages are left out: no exchange reads them, and a conversation has no such roles.
    Inputs with a conversation already, or without messages, are returned as they are (less
    ``messages``)."""
    out = dict(inputs)
    messages = out.pop("messages", None)
    if out.get("conversation") is not None or messages is None:
        return out
    if isinstance(messages, list):
        messages = [
            m for m in messages if not (isinstance(m, Mapping) and m.get("role") in _NOT_IN_EXCHANGES)
        ]
    conversation: dict[str, Any] = {"messages": messages}
    for name in ("context", "tool_definitions"):
        value = out.pop(name, None)
        if value is not None:
            conversation[name] = value
    ground_truth = out.pop("ground_truth", None)
    if ground_truth is not None and isinstance(messages, list):
        conversation["messages"] = [
            {**m, "ground_truth": ground_truth}
            if isinstance(m, Mapping) and m.get("role") == "assistant" and "ground_truth" not in m
            else m
            for m in messages
        ]
    out["conversation"] = conversation
    return out


def aggregator(how: str) -> Callable[[list[Any]], Any]:
    """The function applied to a key's per-turn numbers: the SDK's mean (a float, ``sum / n``, so
    booleans give the share of True), or ``min`` / ``max`` (the value as it is)."""
    if how == "min":
        return min
    if how == "max":
        return max
    return lambda values: sum(values) / len(values)


def per_turn_columns(outs: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """``{key: [value for each turn]}`` over the keys any turn has, None where a turn lacks one (the
    SDK's turns all have the same keys; a failed or skipped turn here may not, and the lists stay
    aligned with the turns)."""
    keys: dict[str, None] = {}
    for out in outs:
        keys.update(dict.fromkeys(out))
    return {k: [out.get(k) for out in outs] for k in keys}


def combine_outputs(outs: Sequence[Mapping[str, Any]], how: str = "mean") -> dict[str, Any]:
    """The SDK's combination of per-turn outputs: numeric keys aggregated, other keys from the last
    turn (except the per-call metadata keys of :data:`NOT_PROMOTED`), and ``evaluation_per_turn``."""
    per_turn = per_turn_columns(outs)
    fn = aggregator(how)
    combined: dict[str, Any] = {}
    for key, values in per_turn.items():
        if all(isinstance(v, (int, float)) for v in values):
            combined[key] = fn(values)
        elif key and not key.endswith(NOT_PROMOTED) and values:
            combined[key] = values[-1]
    combined["evaluation_per_turn"] = per_turn
    return combined


def check_not_mixed(evaluator: ExchangeMetric, others: Mapping[str, Any]) -> None:
    """The SDK's rule: a conversation and single-row inputs are not given together."""
    given = sorted(k for k, v in others.items() if k != "conversation" and v)
    if given:
        raise InputValidationError(
            [Problem(evaluator.metric, None, given[0],
                     "a conversation and single-row inputs cannot be given together; pass one or the other")]
        )


async def score_conversation(
    evaluator: TurnScorer, conversation: Mapping[str, Any], others: Mapping[str, Any] | None = None
) -> Outcome:
    """Judge every exchange of ``conversation`` (concurrently) as ``evaluator.conversation_mode`` says
    and combine the outputs as the SDK does (see the module's description)."""
    check_not_mixed(evaluator, others or {})
    last_only = bool(getattr(evaluator, "eval_last_turn", False))
    if getattr(evaluator, "conversation_mode", "sdk") == "history":
        turns = split_turns(conversation)  # light: the histories are views, made into text when judged
        if last_only:
            turns = turns[-1:]
        coros = [evaluator._turn(t) for t in turns]
        trim = True
    else:
        rows = exchange_inputs(conversation, turn_input_names(evaluator), last_turn=last_only)
        coros = [evaluator._single(**row) for row in rows]
        trim = False  # the SDK's exchanges: prompts as long as one exchange, kept as the SDK keeps them
    if not coros:
        return no_exchange(evaluator)
    outs = await gather_outputs(evaluator, coros, trim_samples=trim)
    return combine_turns(evaluator, outs)


def no_exchange(evaluator: ExchangeMetric) -> Outcome:
    """A conversation without a user/assistant exchange: the SDK returns an empty dict; the Score
    says there was nothing to judge (no value, not a failure)."""
    info = evaluator.info
    reason = "Not applicable: the conversation has no user message paired with an assistant message."
    nothing = Score(info.key, None, label="not_applicable", reason=reason, threshold=evaluator.threshold)
    return Outcome([nothing])


async def gather_outputs(
    evaluator: ExchangeMetric, coros: Sequence[Any], *, trim_samples: bool = False
) -> list[Outcome]:
    """Run judgements concurrently, at most :data:`TURNS_IN_FLIGHT` at a time (a coroutine renders
    its prompt only once started); each one's failure (other than an aborted run) becomes a failure
    dict, so one bad turn does not hide the others. ``trim_samples``: long ``sample_input`` values
    are trimmed as each judgement ends (see :data:`SAMPLE_INPUT_LIMIT`)."""
    gate = asyncio.Semaphore(TURNS_IN_FLIGHT)

    async def bounded(coro: Awaitable[Any]) -> Any:
        started = False
        try:
            async with gate:
                started = True
                result = await coro
                return trim_sample_inputs(result) if trim_samples else result
        finally:
            if not started and hasattr(coro, "close"):
                coro.close()  # cancelled while waiting its turn: never started, so no warning

    results = await asyncio.gather(*(bounded(c) for c in coros), return_exceptions=True)
    outs: list[Outcome] = []
    for r in results:
        if isinstance(r, RunAbortedError):
            raise r
        if isinstance(r, BaseException):
            if not isinstance(r, Exception):
                raise r
            outs.append(evaluator.failure(r))
        else:
            outs.append(evaluator.as_outcome(r))
    return outs


def trim_sample_inputs(outputs: Any) -> Any:
    """``outputs`` with every ``sample_input`` longer than :data:`SAMPLE_INPUT_LIMIT` in its
    properties (the ``*_properties`` dicts and its Scores' properties) trimmed in place."""
    if not isinstance(outputs, Mapping):
        return outputs
    found = [v for k, v in outputs.items() if str(k).endswith("_properties") and isinstance(v, dict)]
    found += [score.properties for score in getattr(outputs, "scores", None) or () if score.properties]
    for props in found:
        sample = props.get("sample_input")
        if isinstance(sample, str) and len(sample) > SAMPLE_INPUT_LIMIT:
            props["sample_input"] = _trimmed(sample)
    return outputs


def _trimmed(sample: str) -> str:
    """A ``sample_input`` (messages as JSON) with each long message's middle left out, still JSON."""
    import json

    try:
        messages = json.loads(sample)
    except ValueError:
        return sample[:SAMPLE_INPUT_LIMIT] + f"... [{len(sample) - SAMPLE_INPUT_LIMIT} characters left out]"
    keep = SAMPLE_MESSAGE_KEEP
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str) and len(content) > 2 * keep:
            left_out = len(content) - 2 * keep
            head, tail = content[:keep], content[-keep:]
            message["content"] = f"{head}\n... [{left_out} characters left out] ...\n{tail}"
    return json.dumps(messages, ensure_ascii=False)


def _number(value: Any) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value == value:
        return float(value)
    return None


def combine_turns(evaluator: TurnScorer, outs: Sequence[Outcome]) -> Outcome:
    """The conversation's Outcome from its turns' outputs: the SDK's keys (see :func:`combine_outputs`),
    touchstone's ``m_turns_min`` / ``m_all_turns_passed``, and Scores that agree with them."""
    info = evaluator.info
    key, m = info.key, info.prefix
    failed = [(i, o[evaluator.error_key]) for i, o in enumerate(outs) if o.get(evaluator.error_key)]
    if failed:
        i, cause = failed[0]
        more = f" ({len(failed)} of {len(outs)} turns failed)" if len(failed) > 1 else ""
        cause_text = f"turn {i + 1} of {len(outs)}: {cause}{more}"
        result = evaluator.failure(cause_text, kind=ErrorKind.PARTIAL.value)
        result["evaluation_per_turn"] = per_turn_columns(outs)
        return result
    how = evaluator.conversation_aggregation
    out = dict(outs[0]) if len(outs) == 1 else combine_outputs(outs, how)
    turn_scores = [_number(o.get(key)) for o in outs]
    scored = [s for s in turn_scores if s is not None]
    verdicts = [o.get(f"{m}_passed") for o in outs if isinstance(o.get(f"{m}_passed"), bool)]
    lowest = min(scored) if scored else None
    all_passed = all(verdicts) if verdicts else None
    out[f"{m}_turns_min"] = lowest
    out[f"{m}_all_turns_passed"] = all_passed
    last_props = out.get(f"{m}_properties")
    properties = dict(last_props) if isinstance(last_props, Mapping) else {}
    if len(outs) > 1:
        # the last turn's details (as the SDK), with how the conversation's values were made
        properties.update({"turns": len(outs), "aggregation": how,
                           "conversation_mode": getattr(evaluator, "conversation_mode", "sdk")})
        if isinstance(last_props, Mapping):
            out[f"{m}_properties"] = properties
    value = _number(out.get(key))
    verdict = out.get(f"{m}_result")
    reason = out.get(f"{m}_reason")
    main = Score(
        key,
        value,
        label=None if value is not None else "not_applicable",
        reason=reason if isinstance(reason, str) else None,
        passed=(verdict == "pass") if verdict in ("pass", "fail") and value is not None else None,
        threshold=evaluator.threshold,
        properties=properties or None,
    )
    scores = [main]
    if lowest is not None:
        scores.append(Score(f"{m}_turns_min", lowest, passed=all_passed, threshold=evaluator.threshold))
    # other numbers a metric reports per turn (a retrieval coverage...) as the SDK aggregates them
    for name in info.secondary:
        extra = _number(out.get(name))
        if extra is not None:
            scores.append(Score(name, extra))
    return Outcome(scores, out)


__all__ = [
    "CONVERSATION_MODES",
    "MESSAGE_ROLES",
    "ExchangeMetric",
    "Turn",
    "TurnScorer",
    "bare_messages_problem",
    "combine_outputs",
    "combine_turns",
    "exchange_inputs",
    "messages_as_conversation",
    "per_turn_columns",
    "score_conversation",
    "split_turns",
    "turn_input_names",
]
