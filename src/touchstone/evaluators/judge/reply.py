"""Turning a judge's reply into a score, or into a failure with its cause — never a guessed number.

The judge is asked for a JSON object (through the server's structured output when it has one). When
the reply is not clean JSON, :func:`parse_judge_reply` looks for the score tolerantly, in this order:

1. JSON objects anywhere in the reply (in code fences, among prose, with single quotes); the score is
   the value of the object's ``score`` field (or ``rating``, or the metric's own name);
2. a quoted ``"score": N`` in JSON too broken to load (truncated, trailing commas), when the number is
   clearly complete (followed by ``,`` or ``}``);
3. labelled scores in prose: ``Score: 4``, ``**Rating**: 4/5``, ``<score>4</score>``;
4. fractions over the scale's top: ``4/5``, ``4 out of 5``;
5. a reply that is nothing but a number.

Every candidate found at the earliest level that has one must agree (and labelled prose around a JSON
object must agree with it); two different numbers make the reply ambiguous. A number that is not an
integer of the scale, a fraction over another scale, or no number at all is a failure whose cause says
which; the caller may ask the judge once to repair it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from touchstone.judges.parsing import json_objects

REASON_KEYS = ("reason", "explanation", "reasoning", "rationale", "justification")
_NUM = r"[-+]?\d+(?:\.\d+)?"


@dataclass(frozen=True)
class Scale:
    """An integer rating scale ``low..high`` (inclusive)."""

    low: int = 1
    high: int = 5

    def __post_init__(self) -> None:
        if self.low >= self.high:
            raise ValueError(f"scale {self.low}-{self.high}: the low end must be below the high end")

    @property
    def values(self) -> range:
        return range(self.low, self.high + 1)

    def __str__(self) -> str:
        return f"{self.low}-{self.high}"


@dataclass
class ParsedReply:
    """What a reply yields: a score with its reason and character span in the reply (for locating
    its token's log-probabilities), the JSON object it came from, or an error saying why not."""

    score: int | None = None
    reason: str = ""
    data: dict[str, Any] | None = None
    span: tuple[int, int] | None = None
    error: str | None = None
    how: str = ""
    """Which rule found the score: ``json``, ``json-fragment``, ``label``, ``fraction``, ``bare``."""
    candidates: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.score is not None and self.error is None


@dataclass
class _Candidate:
    raw: str
    value: float | None
    span: tuple[int, int] | None
    denominator: float | None = None


def _to_number(raw: Any) -> float | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, (int, float)):
        return float(raw) if math.isfinite(float(raw)) else None
    if isinstance(raw, str):
        text = raw.strip()
        m = re.fullmatch(rf"({_NUM})\s*(?:(?:/|out of)\s*(\d+))?", text, re.IGNORECASE)
        if m:
            return float(m.group(1))
    return None


def _check(value: float | None, raw: str, scale: Scale, denominator: float | None = None) -> str | None:
    """Why ``value`` is not an acceptable score, or None."""
    if value is None:
        return f"the score {raw!r} is not a number"
    if denominator is not None and denominator != scale.high:
        return f"the score {raw} is on a scale other than {scale}"
    if value != int(value):
        return f"the score {raw} is not an integer on the {scale} scale"
    if not scale.low <= int(value) <= scale.high:
        return f"the score {raw} is outside the {scale} scale"
    return None


# ------------------------------------------------------------------------------------ JSON fields
def _score_field(obj: Mapping[str, Any], score_keys: Sequence[str]) -> tuple[str, Any] | None:
    lowered = {str(k).lower(): k for k in obj}
    for key in score_keys:
        if key.lower() in lowered:
            real = lowered[key.lower()]
            return str(real), obj[real]
    return None


def _reason_of(obj: Mapping[str, Any]) -> str:
    lowered = {str(k).lower(): k for k in obj}
    for key in REASON_KEYS:
        if key in lowered and isinstance(obj[lowered[key]], str):
            return str(obj[lowered[key]])
    return ""


def _span_in(text: str, start: int, end: int, key: str) -> tuple[int, int] | None:
    """Character span of the value of ``key`` within ``text[start:end]`` (a JSON object), when the
    key occurs there exactly once."""
    pattern = re.compile(r"[\"']" + re.escape(key) + r"[\"']\s*:\s*[\"']?(" + _NUM + ")")
    matches = list(pattern.finditer(text, start, end))
    if len(matches) != 1:
        return None
    return matches[0].span(1)


# ------------------------------------------------------------------------------------------ prose
_LABEL = re.compile(
    r"(?<![a-z])(?:final\s+|overall\s+)?(?:score|rating|grade)(?![a-z])[*_\s]*"
    r"(?:\(\s*\d+\s*[-–]\s*\d+\s*\)[*_\s]*)?"  # "Score (1-5): 4"
    r"(?::|=|\bis\b|\bof\b)?[*_\s]*"
    r"(" + _NUM + r")(?!\s*[-–]\s*\d)"  # a range such as "1-5" is not a score
    r"(?:\s*(?:/|out\s+of)\s*(\d+))?",
    re.IGNORECASE,
)
_TAG = re.compile(r"<\s*(?:score|rating)\s*>\s*(" + _NUM + r")\s*<\s*/\s*(?:score|rating)\s*>", re.IGNORECASE)
_FRACTION = re.compile(r"(?<![\d./])(" + _NUM + r")\s*(?:/|out\s+of)\s*(\d+)(?![\d/])", re.IGNORECASE)
_QUOTED_SCORE = r"[\"']{key}[\"']\s*:\s*[\"']?(" + _NUM + r")[\"']?\s*(?=[,}}\n])"


def _labelled(text: str) -> list[_Candidate]:
    out = []
    for m in _TAG.finditer(text):
        out.append(_Candidate(m.group(0), float(m.group(1)), m.span(1)))
    for m in _LABEL.finditer(text):
        out.append(_Candidate(m.group(0).strip(), float(m.group(1)), m.span(1), _den(m.group(2))))
    return out


def _den(raw: str | None) -> float | None:
    return float(raw) if raw is not None else None


def _fractions(text: str) -> list[_Candidate]:
    return [
        _Candidate(m.group(0), float(m.group(1)), m.span(1), float(m.group(2)))
        for m in _FRACTION.finditer(text)
    ]


def _resolve(cands: list[_Candidate], scale: Scale, what: str) -> tuple[_Candidate | None, str | None]:
    """One agreed, acceptable candidate, or the reason there is none."""
    values = {c.value for c in cands}
    if len(values) > 1:
        shown = ", ".join(sorted({c.raw for c in cands}))
        return None, f"ambiguous: the reply gives different scores ({shown})"
    cand = cands[0]
    denominators = {c.denominator for c in cands if c.denominator is not None}
    if len(denominators) > 1:
        return None, f"ambiguous: the reply scores on different scales ({', '.join(c.raw for c in cands)})"
    bad = _check(cand.value, cand.raw, scale, next(iter(denominators), None))
    if bad:
        return None, bad
    return cand, None


def _strip_fences(text: str) -> str:
    return re.sub(r"```[a-zA-Z0-9_-]*", "", text)


def parse_judge_reply(
    text: str | None,
    scale: Scale = Scale(),
    *,
    score_keys: Sequence[str] = ("score",),
    require_json: bool = False,
) -> ParsedReply:
    """The score in a judge's reply on ``scale``, or a :class:`ParsedReply` with ``error`` set.

    ``score_keys``: JSON field names that hold the score (``rating`` is always accepted too).
    ``require_json``: the caller needs the JSON object (extra fields such as a reference answer), so
    prose without one is a failure.
    """
    if text is None or not text.strip():
        return ParsedReply(error="the reply is empty")
    keys = [*score_keys, "score", "rating"]
    parsed = _from_json(text, keys, scale, require_json)
    if parsed is None:
        parsed = _from_fragments(text, keys, scale, require_json)
    if parsed is None:
        parsed = _from_prose(text, scale)
    return parsed


def _from_json(text: str, keys: Sequence[str], scale: Scale, require_json: bool) -> ParsedReply | None:
    """The score of the reply's loadable JSON object(s); None when the reply holds no JSON object."""
    objects = json_objects(text)
    dicts = [(o, s, e) for o, s, e in objects if isinstance(o, dict)]
    for o, s, e in objects:  # a list of objects: look inside it, so two scores there are noticed
        if isinstance(o, list):
            dicts.extend((item, s, e) for item in o if isinstance(item, dict))
    scored = [(o, s, e, f) for o, s, e in dicts if (f := _score_field(o, keys)) is not None]
    if scored:
        cands = []
        for _o, s, e, (key, raw) in scored:
            cands.append(_Candidate(json.dumps(raw), _to_number(raw), _span_in(text, s, e, key),
                                    _fraction_den(raw)))
        # labelled scores in prose outside the JSON must agree with it
        outside = text
        for _o, s, e in objects:
            outside = outside[:s] + " " * (e - s) + outside[e:]
        extra = _labelled(outside)
        numbers = {c.value for c in cands} | {c.value for c in extra}
        if len(numbers) > 1:
            shown = ", ".join(sorted({c.raw for c in cands + extra}))
            return ParsedReply(error=f"ambiguous: the reply gives different scores ({shown})",
                               candidates=[c.raw for c in cands + extra])
        cand, err = _resolve(cands, scale, "JSON")
        obj = scored[0][0]
        if err or cand is None:
            return ParsedReply(
                error=err, data=dict(obj), reason=_reason_of(obj), candidates=[c.raw for c in cands]
            )
        return ParsedReply(int(cand.value or 0), _reason_of(obj), dict(obj), cand.span, how="json")

    if dicts:
        obj = dicts[0][0]
        if require_json:
            return ParsedReply(error="the reply's JSON object has no \"score\" field", data=dict(obj))
        # a JSON object without a score (wrong schema): do not go looking for numbers in it
        return ParsedReply(
            error=f"the reply's JSON object has no score field (fields: {', '.join(map(str, obj))})",
            data=dict(obj),
        )
    return None


def _from_fragments(text: str, keys: Sequence[str], scale: Scale, require_json: bool) -> ParsedReply | None:
    """JSON too broken to load: a quoted score field whose number is visibly complete; None when the
    reply has no JSON at all (and the caller accepts prose)."""
    frag = []
    for key in keys:
        for m in re.finditer(_QUOTED_SCORE.format(key=re.escape(key)), text, re.IGNORECASE):
            frag.append(_Candidate(m.group(0).strip(), float(m.group(1)), m.span(1)))
    if frag:
        if require_json:
            return ParsedReply(error="the reply's JSON is malformed (it could not be loaded)")
        cand, err = _resolve(frag, scale, "JSON")
        reason = _fragment_reason(text)
        if err or cand is None:
            return ParsedReply(error=err, reason=reason)
        return ParsedReply(int(cand.value or 0), reason, None, cand.span, how="json-fragment")
    if "{" in _strip_fences(text) and re.search(r"[\"']score[\"']\s*:", text, re.IGNORECASE):
        return ParsedReply(error="the reply's JSON is truncated before its score is complete")
    if require_json:
        return ParsedReply(error="the reply holds no JSON object")
    return None


def _from_prose(text: str, scale: Scale) -> ParsedReply:
    """A labelled score, a fraction on the scale, or a bare number in a reply without JSON."""
    for finder, how in ((_labelled, "label"), (_fractions, "fraction")):
        cands = finder(text)
        if how == "fraction":
            on_scale = [c for c in cands if c.denominator == scale.high]
            if not on_scale and cands:
                return ParsedReply(error=f"the score {cands[0].raw} is on a scale other than {scale}")
            cands = on_scale
        if cands:
            cand, err = _resolve(cands, scale, how)
            if err or cand is None:
                return ParsedReply(error=err, candidates=[c.raw for c in cands])
            reason = _prose_reason(text, cands)
            return ParsedReply(int(cand.value or 0), reason, None, cand.span, how=how)

    bare = re.fullmatch(r"\s*[*_\"'`]*(" + _NUM + r")[*_\"'`.]*\s*", text)
    if bare:
        value = float(bare.group(1))
        bad = _check(value, bare.group(1), scale)
        if bad:
            return ParsedReply(error=bad)
        return ParsedReply(int(value), "", None, bare.span(1), how="bare")
    if re.search(r"\d", text):
        return ParsedReply(error="no score found: the reply has numbers, but none is clearly the score")
    return ParsedReply(error="no score found in the reply")


def _fraction_den(raw: Any) -> float | None:
    if isinstance(raw, str):
        m = re.fullmatch(rf"\s*{_NUM}\s*(?:/|out of)\s*(\d+)\s*", raw, re.IGNORECASE)
        if m:
            return float(m.group(1))
    return None


def _fragment_reason(text: str) -> str:
    m = re.search(
        r"[\"'](?:" + "|".join(REASON_KEYS) + r")[\"']\s*:\s*\"((?:[^\"\\]|\\.)*)\"", text, re.IGNORECASE
    )
    if not m:
        return ""
    try:
        return str(json.loads('"' + m.group(1) + '"'))
    except json.JSONDecodeError:
        return m.group(1)


def _prose_reason(text: str, cands: list[_Candidate]) -> str:
    """The reply without the score's own line, as the reason."""
    lines = [
        ln
        for ln in text.strip().splitlines()
        if not any(c.raw and c.raw in ln and len(ln.strip()) <= len(c.raw) + 12 for c in cands)
    ]
    reason = "\n".join(lines).strip()
    return reason or text.strip()
