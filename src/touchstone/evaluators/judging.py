"""Asking a judge for a score: the request, the one repair, the log-probability expectation, and the
base class of every LLM-judged metric.

A judgement is: render the prompt (text under evaluation delimited), ask the judge for a JSON object
with the reasoning first and the integer score last (the server's structured output where it has
one), parse the reply (:mod:`touchstone.evaluators.parsing`). A reply that yields no acceptable score
gets exactly one repair request naming the problem; if that fails too, the row is recorded as a
failure with the cause (``m_error``), never with a guessed number.

``score_mode="logprobs"`` asks for token log-probabilities and reports the probability-weighted
expected score over the scale's tokens at the score's position (continuous, as G-Eval does). When the
server returns none for a row, that row falls back to the sampled score; ``m_properties`` records
which was used and why.
"""

from __future__ import annotations

import inspect
import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Literal, TypeVar

from pydantic import BaseModel, ValidationError

from touchstone._exceptions import ErrorCategory
from touchstone.errors import (
    ConfigurationError,
    InputValidationError,
    Problem,
    missing_input_classification,
)
from touchstone.evaluators.base import Evaluator, Outputs, check_options, describe_exception
from touchstone.evaluators.parsing import ParsedReply, Scale, parse_judge_reply
from touchstone.evaluators.prompting import PromptTemplate, load_prompt
from touchstone.judges.parsing import extract_json
from touchstone.judges.wire import messages_json
from touchstone.scores import Outcome, Score

ScoreMode = Literal["sampled", "logprobs"]
SCORE_MODES = ("sampled", "logprobs")
Aggregation = Literal["min", "mean", "max"]
AGGREGATIONS = ("min", "mean", "max")
MAX_TOP_LOGPROBS = 20
SDK_ONLY_OPTIONS = ("eval_last_turn", "_higher_is_better", "conversation_aggregation_type",
                    "conversation_aggregator_override")
"""Options the compatible SDK's judge evaluators accept that change nothing here; any other unknown
option is an error naming the closest valid one."""


class JudgeReplyError(ValueError):
    """The judge answered, but no acceptable score could be read from its reply (after one repair
    request). ``reply`` keeps the last reply text for inspection."""

    error_kind = "judge_reply"

    def __init__(self, cause: str, reply: str | None = None) -> None:
        super().__init__(cause)
        self.reply = reply


def no_judge_error(metric: str) -> ConfigurationError:
    """The error raised when a judge metric is chosen and no judge model is configured."""
    return ConfigurationError(
        f"metric {metric} needs a judge model, and none is configured: pass --judge-model MODEL "
        "(with --judge-base-url URL for an OpenAI-compatible server), or set OPENAI_API_KEY "
        "(and OPENAI_BASE_URL / TOUCHSTONE_JUDGE_MODEL), or AZURE_OPENAI_ENDPOINT with "
        "AZURE_OPENAI_API_KEY and AZURE_OPENAI_DEPLOYMENT; in Python pass model_config=..."
    )


_CONFIG_TEXT_KEYS = ("type", "model", "api_key", "base_url", "organization", "azure_endpoint",
                     "azure_deployment", "api_version", "provider_name")


def _config_shape_problem(config: Mapping[str, Any]) -> str | None:
    """What the compatible SDK rejects in a model configuration dict when a judge evaluator is
    built, less what touchstone completes later (an API key from the environment or none for a
    local server, touchstone's own keys): an unknown ``type`` or key, a non-text value where text
    is expected, ``extra_headers`` that is not a dict of texts, an OpenAI configuration without
    ``model``, an Azure one without endpoint or deployment (in it or in the environment)."""
    import os
    from dataclasses import fields as dataclass_fields

    from touchstone.judges.config import AzureOpenAIConfig, OpenAIConfig, ProviderModelConfiguration

    kind = config.get("type")
    if kind is not None and kind not in ("openai", "azure_openai", "provider"):
        return f"unknown model configuration type {kind!r} (expected 'openai' or 'azure_openai')"
    known = {f.name for c in (OpenAIConfig, AzureOpenAIConfig, ProviderModelConfiguration)
             for f in dataclass_fields(c)}
    unknown = sorted(str(k) for k in config if k not in known)
    if unknown:
        return f"the model configuration has unknown keys: {unknown}"
    for key in _CONFIG_TEXT_KEYS:
        if config.get(key) is not None and not isinstance(config[key], str):
            return f"the model configuration's {key!r} must be a string, not {type(config[key]).__name__}"
    headers = config.get("extra_headers")
    if headers is not None and not (
        isinstance(headers, Mapping) and all(isinstance(v, str) for v in headers.values())
    ):
        return "the model configuration's 'extra_headers' must be a dict of strings to strings"
    azure_keys = "azure_endpoint" in config or "azure_deployment" in config
    if kind == "azure_openai" or (kind is None and azure_keys):
        for key, env in (
            ("azure_endpoint", "AZURE_OPENAI_ENDPOINT"),
            ("azure_deployment", "AZURE_OPENAI_DEPLOYMENT"),
        ):
            if not config.get(key) and not os.environ.get(env):
                return f"an Azure OpenAI model configuration needs {key!r} (or ${env})"
    elif kind != "provider" and "provider_name" not in config and not config.get("model"):
        return "an OpenAI model configuration needs 'model' (e.g. 'gpt-4o-mini')"
    return None


def check_model_config(config: Any) -> None:
    """Raise a :class:`~touchstone.errors.ConfigurationError` (category ``MISSING_FIELD``, as the SDK
    classifies every malformed configuration) when a model configuration dict cannot work, so that a
    judge evaluator fails when it is built, as the SDK's does. Resolved configurations and anything
    that is not a dict are left to :func:`touchstone.judges.config.as_model_config` at first use."""
    if not isinstance(config, dict):
        return
    problem = _config_shape_problem(config)
    if problem is not None:
        from touchstone._exceptions import ErrorTarget

        raise ConfigurationError(f"Model config validation failed: {problem}.",
                                 category=ErrorCategory.MISSING_FIELD, target=ErrorTarget.MODELS)


def check_score_mode(score_mode: str) -> ScoreMode:
    if score_mode not in SCORE_MODES:
        raise ConfigurationError(f"score_mode must be one of {', '.join(SCORE_MODES)}, got {score_mode!r}")
    return score_mode  # type: ignore[return-value]


def check_aggregation(how: str) -> Aggregation:
    if how not in AGGREGATIONS:
        raise ConfigurationError(
            f"conversation_aggregation must be one of {', '.join(AGGREGATIONS)}, got {how!r}"
        )
    return how  # type: ignore[return-value]


def check_conversation_mode(mode: str) -> str:
    if mode not in ("sdk", "history"):
        raise ConfigurationError(f"conversation_mode must be one of sdk, history, got {mode!r}")
    return mode


def describe_judge(model_config: Any) -> dict[str, Any]:
    """The judge configuration without secrets (for provenance)."""
    try:
        from touchstone.judges.config import as_model_config

        cfg = as_model_config(model_config)
        return {
            "model": cfg.model_name,
            **{
                k: v
                for k, v in cfg.public().items()
                if k in ("type", "base_url", "azure_endpoint", "api_version")
            },
        }
    except Exception:  # provenance only: an odd configuration is reported when the judge is called
        return {"model": str(getattr(model_config, "get", lambda *_: None)("model") or "?")}


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


# ------------------------------------------------------------------------------ log-probabilities
_SCORE_TOKEN = re.compile(r"^[\s\"':]*([-+]?\d+)[\s\"',}\]]*$")


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, Mapping) else getattr(obj, name, None)


@dataclass
class Expectation:
    """The probability-weighted expected score, or why none could be computed."""

    score: float | None
    probabilities: dict[int, float] = field(default_factory=dict)
    mass: float = 0.0
    """Probability of the scale's tokens among the returned alternatives, before renormalising."""
    error: str | None = None


def expected_score(
    tokens: Sequence[Any] | None, text: str, span: tuple[int, int] | None, scale: Scale
) -> Expectation:
    """E[score] = Σ p(k)·k / Σ p(k) over the scale's values k, from the top alternatives of the token
    that carries the score (at ``span`` of ``text``). Alternatives that spell the same number (``4``,
    `` 4``) are summed; the sampled token is counted even if the server left it out of ``top``."""
    if not tokens:
        return Expectation(None, error="the server returned no log-probabilities")
    if span is None:
        return Expectation(None, error="the score's position in the reply is unknown")
    carrier, error = _score_carrier(tokens, text, span)
    if carrier is None:
        return Expectation(None, error=error or "no token carries the score")
    chosen = _SCORE_TOKEN.match(str(_field(carrier, "token")))
    if not chosen:
        return Expectation(None, error="the score's token holds more than the score")
    top = list(_field(carrier, "top") or [])
    if not top:
        return Expectation(None, error="the server returned no alternative tokens (top_logprobs)")
    probs = _scale_probabilities(top, carrier, int(chosen.group(1)), scale)
    mass = sum(probs.values())
    if mass <= 0:
        return Expectation(None, error="no alternative token is a score on the scale")
    expectation = sum(k * p for k, p in probs.items()) / mass
    return Expectation(expectation, {k: p / mass for k, p in sorted(probs.items())}, mass)


def _score_carrier(tokens: Sequence[Any], text: str, span: tuple[int, int]) -> tuple[Any | None, str]:
    """The token that carries the score at ``span`` of ``text``, or None and why there is none."""
    pieces = [str(_field(t, "token") or "") for t in tokens]
    joined = "".join(pieces)
    if joined != text:
        # some servers strip or add surrounding whitespace: align on the stripped text
        lead = len(joined) - len(joined.lstrip())
        if joined.strip() != text.strip():
            return None, "the log-probability tokens do not spell the reply"
        shift = lead - (len(text) - len(text.lstrip()))
        span = (span[0] + shift, span[1] + shift)
    pos = 0
    for tok, piece in zip(tokens, pieces, strict=True):
        start, end = pos, pos + len(piece)
        pos = end
        if start <= span[0] < end:
            if end < span[1]:
                return None, "the score is split over several tokens"
            return tok, ""
    return None, "no token carries the score"


def _scale_probabilities(top: list[Any], carrier: Any, chosen: int, scale: Scale) -> dict[int, float]:
    """``{value: probability}`` of the scale's values among the carrier's alternatives (the sampled
    token ``chosen`` counted too when the server left it out of ``top``)."""
    probs: dict[int, float] = {}
    seen_tokens = set()
    for alt in top:
        tok_text, logprob = (
            (alt[0], alt[1])
            if isinstance(alt, (tuple, list))
            else (_field(alt, "token"), _field(alt, "logprob"))
        )
        seen_tokens.add(tok_text)
        m = _SCORE_TOKEN.match(str(tok_text))
        if m and logprob is not None and math.isfinite(float(logprob)):
            value = int(m.group(1))
            if scale.low <= value <= scale.high:
                probs[value] = probs.get(value, 0.0) + math.exp(float(logprob))
    carrier_token = str(_field(carrier, "token"))
    if carrier_token not in seen_tokens:
        lp = _field(carrier, "logprob")
        if scale.low <= chosen <= scale.high and lp is not None:
            probs[chosen] = probs.get(chosen, 0.0) + math.exp(float(lp))
    return probs


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


# ------------------------------------------------------------------------------ the base class
def as_given(threshold: float | None) -> float | None:
    """A default threshold as the SDK writes it: a whole number as an int (``3``, not ``3.0``)."""
    if isinstance(threshold, float) and threshold.is_integer():
        return int(threshold)
    return threshold


class JudgeEvaluator(Evaluator):
    """Base of the LLM-judged metrics: a model configuration, a threshold (default 3 on the 1–5
    scale), ``score_mode`` (``"sampled"`` or ``"logprobs"``) and, for conversations, the aggregation
    of per-turn scores. Outputs follow SPEC 3 with ``gpt_<m>`` kept as an alias of ``<m>``."""

    needs_judge = True
    is_async = True
    tier = "medium"
    default_threshold: ClassVar[float | None] = 3.0
    value_range = "1-5"
    scale: ClassVar[Scale] = Scale(1, 5)
    default_aggregation: ClassVar[Aggregation] = "mean"
    gpt_alias: ClassVar[bool] = True
    messages_input: ClassVar[str | None] = None
    """Whether the metric takes the SDK's bare ``messages=[...]`` (read as a conversation, see
    :func:`touchstone.evaluators.conversation.messages_as_conversation`): None when it does not,
    ``"checked"`` when the messages are checked first as the SDK checks them (relevance, fluency),
    ``"as_is"`` when they are read unchecked, an empty list judging nothing (the SDK's retrieval)."""

    def __init__(
        self,
        model_config: Any,
        *,
        threshold: float | None = None,
        score_mode: str = "sampled",
        conversation_aggregation: str | None = None,
        conversation_mode: str = "sdk",
        credential: Any = None,
        is_reasoning_model: bool | None = None,
        **sdk_options: Any,
    ) -> None:
        check_options(type(self).__name__, sdk_options, (*self.option_names(), *SDK_ONLY_OPTIONS))
        super().__init__(threshold=threshold)
        # conversations (evaluators/conversation.py): the SDK's pairs or touchstone's turns with history,
        # and the SDK's option to judge only the last exchange
        self.conversation_mode: str = check_conversation_mode(conversation_mode)
        self.eval_last_turn: bool = bool(sdk_options.get("eval_last_turn", False))
        # The SDK reports the threshold as the user gave it (an int by default: 3); comparisons and
        # the typed Scores use the float in ``self.threshold``.
        self.sdk_threshold: float | None = (
            threshold if threshold is not None else as_given(self.default_threshold)
        )
        if model_config is None:
            raise no_judge_error(self.metric)
        if not self.judge_optional():
            check_model_config(model_config)
        if (
            is_reasoning_model is not None
            and isinstance(model_config, Mapping)
            and not hasattr(model_config, "model_name")
        ):
            model_config = {**model_config, "is_reasoning_model": is_reasoning_model}
        self.model_config = model_config
        self.credential = credential
        self.score_mode: ScoreMode = check_score_mode(score_mode)
        self.conversation_aggregation: Aggregation = check_aggregation(
            conversation_aggregation or self.default_aggregation
        )
        self._client: Any = None

    def judge_optional(self) -> bool:
        """Whether this instance can score without a judge (its model configuration is then not
        checked when it is built). Default: no."""
        return False

    @classmethod
    def option_names(cls) -> tuple[str, ...]:
        """Every keyword option the class's constructors take (for the unknown-option check)."""
        names: list[str] = []
        for klass in cls.__mro__:
            init = klass.__dict__.get("__init__")
            if init is None:
                continue
            for p in inspect.signature(init).parameters.values():
                if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD) and p.name not in (
                    "self",
                    "model_config",
                ):
                    names.append(p.name)
        return tuple(dict.fromkeys(names))

    @classmethod
    def from_options(
        cls,
        *,
        model_config: Any = None,
        threshold: float | None = None,
        score_mode: str | None = None,
        conversation_aggregation: str | None = None,
        **_: Any,
    ) -> JudgeEvaluator:
        """The registry's factory (CLI): a clear error when no judge is configured."""
        if model_config is None:
            raise no_judge_error(cls.metric)
        return cls(
            model_config,
            threshold=threshold,
            score_mode=score_mode or "sampled",
            conversation_aggregation=conversation_aggregation,
        )

    def client(self) -> Any:
        if self._client is None:
            from touchstone.judges.client import get_judge_client

            self._client = get_judge_client(self.model_config)
        return self._client

    def prompts(self) -> list[PromptTemplate]:
        """The prompts this metric may use (their versions and hashes go into the run's provenance)."""
        return []

    def options(self) -> dict[str, Any]:
        return {
            **super().options(),
            "score_mode": self.score_mode,
            "conversation_aggregation": self.conversation_aggregation,
            "conversation_mode": self.conversation_mode,
            "eval_last_turn": self.eval_last_turn,
            "judge": describe_judge(self.model_config),
            "prompts": {p.name: {"version": p.version, "hash": p.hash} for p in self.prompts()},
        }

    # ------------------------------------------------------------------ outputs
    def result(
        self, score: float, *, reason: str | None = None, properties: Any = None, **extra: Any
    ) -> Outputs:
        """The outcome of a judged row, rendered as the SDK renders it: the score as a float (``4.0``
        whether the judge sampled ``4`` or the log-probability expectation gave ``3.87``), the
        threshold as given (``3``). The typed Score keeps the value as obtained."""
        out = super().result(score, reason=reason, properties=properties, **extra)
        rendered = float(score)
        key, m = self.info.key, self.info.prefix
        out[key] = out[f"{m}_score"] = rendered
        if self.gpt_alias:
            out[f"gpt_{self.score_key}"] = rendered
        out[f"{m}_threshold"] = self.sdk_threshold
        return out

    def not_applicable(self, reason: str) -> Outputs:
        """The SDK's result for a row that cannot be judged (an agent's unfinished response, nothing
        to judge against): no score, ``m_result`` ``"not_applicable"``, ``m_status`` ``"skipped"``.
        The Score has no value and the label ``not_applicable`` (it is not a failure)."""
        m, key = self.info.prefix, self.info.key
        text = f"Not applicable: {reason}"
        out: dict[str, Any] = {
            key: None, f"{m}_score": None, f"{m}_passed": None, f"{m}_result": "not_applicable",
            f"{m}_reason": text, f"{m}_status": "skipped", f"{m}_threshold": self.sdk_threshold,
            f"{m}_properties": None,
        }
        return Outcome([Score(key, None, label="not_applicable", reason=text, threshold=self.threshold)], out)

    def failure(self, error: BaseException | str, *, kind: str | None = None) -> Outputs:
        out = super().failure(error, kind=kind)
        out[f"{self.prefix}_threshold"] = self.sdk_threshold
        props: dict[str, Any] = {"judge_model": describe_judge(self.model_config).get("model")}
        if isinstance(error, JudgeReplyError) and error.reply is not None:
            props["last_reply"] = error.reply[:2000]
        out[f"{self.prefix}_properties"] = props
        return out

    async def _judge(
        self,
        prompt: PromptTemplate,
        data: Mapping[str, str | None],
        **kwargs: Any,
    ) -> Judgement:
        kwargs.setdefault("score_mode", self.score_mode)
        kwargs.setdefault("scale", self.scale)
        return await judge(self.client(), prompt, data, **kwargs)

    def judged(self, j: Judgement, **extra: Any) -> Outputs:
        """Outputs of one judgement."""
        return self.result(j.score, reason=j.reason, properties=j.properties, **extra)

    # ------------------------------------------------------------------ calling
    def check_call_inputs(self, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The base checks, after a bare ``messages=[...]`` is read as a conversation (where the
        metric takes one: :attr:`messages_input`)."""
        if self.messages_input is None or kwargs.get("messages") is None:
            return super().check_call_inputs(kwargs)
        from touchstone.evaluators.conversation import bare_messages_problem, messages_as_conversation

        if self.messages_input == "checked":
            problem = bare_messages_problem(kwargs["messages"])
            if problem is not None:
                _, target = missing_input_classification(type(self))
                raise InputValidationError([Problem(self.metric, None, "messages", problem)],
                                           category=ErrorCategory.INVALID_VALUE, target=target)
        inputs = messages_as_conversation(kwargs)
        conversation = inputs.get("conversation")
        if isinstance(conversation, Mapping) and conversation.get("messages") == []:
            # unchecked, an empty message list has no exchange to judge (the SDK returns {})
            return {k: v for k, v in inputs.items() if v is not None}
        return super().check_call_inputs(inputs)

    # ------------------------------------------------------------------ dispatch
    async def _ascore(self, **inputs: Any) -> Outputs:
        if self.messages_input is not None and inputs.get("messages") is not None:
            from touchstone.evaluators.conversation import messages_as_conversation

            inputs = messages_as_conversation(inputs)
        conversation = inputs.get("conversation")
        if conversation is not None:
            from touchstone.evaluators.conversation import score_conversation

            return await score_conversation(self, conversation, inputs)
        return await self._single(**inputs)

    async def _single(self, **inputs: Any) -> Outputs:
        raise NotImplementedError

    async def _turn(self, turn: Any) -> Outputs:
        """Outputs for one assistant turn of a conversation (see :mod:`.conversation`)."""
        raise NotImplementedError(f"{self.metric} does not take a conversation")


__all__ = [
    "Answer",
    "JudgeEvaluator",
    "JudgeReplyError",
    "Judgement",
    "ask",
    "describe_exception",
    "expected_score",
    "judge",
    "model_reader",
    "no_judge_error",
    "score_schema",
]


_JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "TOUCHSTONE_JUDGE_MODEL", "AZURE_OPENAI_ENDPOINT")


def configured_judge(model: str | None = None, base_url: str | None = None) -> Any:
    """The judge configuration the command line uses: from ``--judge-model``/``--judge-base-url``
    with the environment as fallback, or None when neither names a judge (so that a judge metric can
    say how to configure one before anything runs)."""
    import os

    if not (model or base_url or any(os.environ.get(name) for name in _JUDGE_ENV)):
        return None
    from touchstone.judges.config import model_config_from_env

    return model_config_from_env(model, base_url=base_url)
