"""The probability-weighted expected score (G-Eval's continuous score) from the token
log-probabilities of a judge's reply: the alternatives of the token that carries the score, summed per
value of the scale and renormalised."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from touchstone.evaluators.judge.reply import Scale

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
