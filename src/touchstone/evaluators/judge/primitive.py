"""The one judge primitive: render a prompt (the text under evaluation delimited), ask for a JSON
object following a schema (the server's structured output where it has one), validate the reply, send
exactly one repair request naming the problem when it cannot be used, and return the value with the
call's provenance and usage. :func:`judge` builds a score on a scale on top of it, in
``score_mode="logprobs"`` the probability-weighted expectation over the scale's tokens.

A reply that yields nothing usable after the repair raises :class:`JudgeReplyError`: the row is
recorded as a failure with its cause, never with a guessed number.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from touchstone.evaluators.judge.logprobs import expected_score
from touchstone.evaluators.judge.prompts import PromptTemplate, load_prompt
from touchstone.evaluators.judge.reply import ParsedReply, Scale, parse_judge_reply
from touchstone.judges.parsing import extract_json
from touchstone.judges.wire import messages_json

ScoreMode = Literal["sampled", "logprobs"]
SCORE_MODES = ("sampled", "logprobs")
MAX_TOP_LOGPROBS = 20


class JudgeReplyError(ValueError):
    """The judge answered, but no acceptable score could be read from its reply (after one repair
    request). ``reply`` keeps the last reply text for inspection."""

    error_kind = "judge_reply"

    def __init__(self, cause: str, reply: str | None = None) -> None:
        super().__init__(cause)
        self.reply = reply


# ------------------------------------------------------------------------------ schemas
def score_schema(scale: Scale, before: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """JSON schema of a judgement: ``before`` fields (e.g. a reference answer), ``reason``, ``score``,
    in that order, so the model reasons before it commits to a number."""
    props: dict[str, Any] = dict(before or {})
    props["reason"] = {"type": "string"}
    props["score"] = {"type": "integer", "enum": list(scale.values)}
    return {"type": "object", "properties": props, "required": list(props), "additionalProperties": False}


def format_hint(schema: Mapping[str, Any]) -> str:
    """A one-line example of the expected JSON, for the repair request."""
    parts = []
    for name, spec in schema.get("properties", {}).items():
        kind = spec.get("type")
        if name == "score" and "enum" in spec:
            parts.append(f'"score": <an integer from {spec["enum"][0]} to {spec["enum"][-1]}>')
        elif kind == "array":
            parts.append(f'"{name}": [...]')
        elif kind == "boolean":
            parts.append(f'"{name}": true or false')
        else:
            parts.append(f'"{name}": "..."')
    return "{" + ", ".join(parts) + "}"


# ------------------------------------------------------------------------------ the judgement
@dataclass
class Judgement:
    """One scored judgement: ``score`` is the sampled integer, or the expectation in logprobs mode."""

    score: float
    reason: str
    data: dict[str, Any] | None
    properties: dict[str, Any]


Check = Callable[[ParsedReply], str | None]
T = TypeVar("T")
Reader = Callable[[str], tuple[T | None, str | None]]
"""Reads a reply's text: ``(value, None)`` when usable, ``(None, cause)`` when not."""


@dataclass
class Answer(Generic[T]):
    """A judge's validated answer: the value read from its reply, the reply itself, whether a repair
    request was needed (and why), and the provenance of the call."""

    value: T
    text: str
    reply: Any
    repaired: bool
    repair_cause: str | None
    properties: dict[str, Any]


def model_reader(model: type[BaseModel]) -> Reader[BaseModel]:
    """A reader validating the reply's JSON object against a pydantic model."""

    def read(text: str) -> tuple[BaseModel | None, str | None]:
        obj = extract_json(text)
        if obj is None:
            return None, "the reply holds no JSON object"
        try:
            return model.model_validate(obj), None
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "the object"
            return None, f"{where}: {first.get('msg', 'invalid')}"

    return read


def call_metadata(replies: Sequence[Any], sent: Sequence[Mapping[str, str]], text: str) -> dict[str, Any]:
    """The compatible SDK's per-call keys of ``m_properties``: ``prompt_tokens``,
    ``completion_tokens``, ``total_tokens`` (summed over every call the judgement took, the repair
    included, so that usage tracking counts what was spent), ``finish_reason`` and ``model`` of the
    last reply, ``sample_input`` (the messages of the last request, as JSON) and ``sample_output``
    (the last reply as an assistant message, as JSON). The messages hold the prompt and the row's
    data only; no configuration or credential reaches them."""
    prompt_tokens = completion_tokens = 0
    for r in replies:
        usage = getattr(r, "usage", None)
        prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
        completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
    last = replies[-1] if replies else None
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
        "finish_reason": str(getattr(last, "finish_reason", None) or ""),
        "model": str(getattr(last, "model", None) or ""),
        "sample_input": messages_json(sent),  # json.dumps(list(sent), ensure_ascii=False), memoised
        "sample_output": json.dumps([{"role": "assistant", "content": text}] if text else [],
                                    ensure_ascii=False),
    }


async def ask(
    client: Any,
    prompt: PromptTemplate,
    data: Mapping[str, str | None],
    read: Reader[T],
    *,
    schema: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
    logprobs: bool = False,
    top_logprobs: int | None = None,
    max_tokens: int | None = None,
    what: str = "answer",
) -> Answer[T]:
    """The one judge primitive every LLM-judged metric is built on.

    Render ``prompt`` (the text under evaluation is delimited by the template), ask for a JSON object
    following ``schema`` (the server's structured output where it has one, negotiated by the
    session), read the reply with ``read``; a reply that cannot be used gets exactly one repair
    request naming the problem, and if that fails too :class:`JudgeReplyError` is raised (the row is
    recorded as failed with the cause, never with a guessed value). The client's own errors
    propagate. Calls, tokens and cost are accounted by the session."""
    messages = prompt.render(data, params)

    async def send(msgs: list[dict[str, str]]) -> Any:
        return await client.chat(
            msgs,
            json_schema=dict(schema),
            schema_name=prompt.name,
            logprobs=logprobs,
            top_logprobs=top_logprobs,
            max_tokens=max_tokens,
        )

    reply = await send(messages)
    replies, sent = [reply], messages
    text = reply.text or ""
    value, error = read(text)
    repaired, first_error = False, error
    if error is not None:
        repair = load_prompt("repair").render({}, {"cause": error, "format": format_hint(schema)})
        sent = [*messages, {"role": "assistant", "content": text}, *repair]
        reply = await send(sent)
        replies.append(reply)
        text = reply.text or ""
        value, error = read(text)
        repaired = True
        if error is not None:
            raise JudgeReplyError(
                f"no usable {what} in the judge's reply: {error} "
                f"(after one repair request; the first reply: {first_error})",
                text,
            )
    props: dict[str, Any] = {
        **prompt.provenance(),
        "judge_model": getattr(reply, "model", "") or getattr(client, "model", ""),
        "structured_output": bool(getattr(reply, "structured", False)),
        "cached": bool(getattr(reply, "cached", False)),
        "repaired": repaired,
    }
    if repaired:
        props["repair_cause"] = first_error
    props.update(call_metadata(replies, sent, text))
    return Answer(value, text, reply, repaired, first_error if repaired else None, props)  # type: ignore[arg-type]


async def judge(
    client: Any,
    prompt: PromptTemplate,
    data: Mapping[str, str | None],
    *,
    params: Mapping[str, Any] | None = None,
    scale: Scale = Scale(),
    score_mode: ScoreMode = "sampled",
    schema: Mapping[str, Any] | None = None,
    score_keys: Sequence[str] = ("score",),
    require_json: bool = False,
    check: Check | None = None,
    max_tokens: int | None = None,
) -> Judgement:
    """A score on ``scale`` (1-5 ratings, 0-7 severities...) through :func:`ask`: the reply is read
    with the tolerant score parser, ``check`` adds metric-specific validation of the parsed reply (a
    cause string when unusable), and in ``score_mode="logprobs"`` the score is the probability-weighted
    expectation over the scale's tokens. Raises :class:`JudgeReplyError`."""
    schema = dict(schema or score_schema(scale))
    want_lp = score_mode == "logprobs"
    top = min(MAX_TOP_LOGPROBS, len(scale.values) + 5) if want_lp else None

    def read(text: str) -> tuple[ParsedReply | None, str | None]:
        parsed = parse_judge_reply(text, scale, score_keys=score_keys, require_json=require_json)
        if parsed.ok and check is not None:
            problem = check(parsed)
            if problem:
                parsed.error = problem
        return (parsed, None) if parsed.ok else (None, parsed.error or "unusable reply")

    answer = await ask(client, prompt, data, read, schema=schema, params=params, logprobs=want_lp,
                       top_logprobs=top, max_tokens=max_tokens, what="score")
    parsed = answer.value
    assert parsed.score is not None
    props = answer.properties
    score: float = parsed.score
    props["score_mode"] = "sampled"
    if want_lp:
        exp = expected_score(getattr(answer.reply, "logprobs", None), answer.text, parsed.span, scale)
        props["sampled_score"] = parsed.score
        if exp.score is not None:
            score = round(exp.score, 6)
            props["score_mode"] = "logprobs"
            props["score_probabilities"] = {str(k): round(v, 6) for k, v in exp.probabilities.items()}
            props["scale_probability_mass"] = round(exp.mass, 6)
        else:
            props["logprobs_fallback"] = exp.error
    return Judgement(score, parsed.reason, parsed.data, props)
