"""Tolerant parsing of judge replies that are not (or not only) JSON.

Used when a server does not honour the JSON-schema response format: the reply may wrap its JSON in a
code fence, add prose around it, use single quotes or Python literals, or leave a trailing comma.
:func:`json_objects` finds every embedded object or array; :func:`extract_json` returns the judge's
object. Neither ever invents one. The evaluators' score parser
(:func:`touchstone.evaluators.judge.reply.parse_judge_reply`) builds on the same scanner.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_TRAILING_COMMA = re.compile(r",\s*([}\]])")


def json_objects(text: str) -> list[tuple[Any, int, int]]:
    """Every JSON (or Python-literal) object or array embedded in ``text``, with its span; nested
    objects inside a found one are not reported separately."""
    decoder = json.JSONDecoder()
    found: list[tuple[Any, int, int]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch not in "{[":
            i += 1
            continue
        try:
            obj, end = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            obj, end = _literal_at(text, i)
        if end > i and isinstance(obj, (dict, list)):
            found.append((obj, i, end))
            i = end
        else:
            i += 1
    return found


def _literal_at(text: str, start: int) -> tuple[Any, int]:
    """A Python literal dict/list starting at ``start`` (single-quoted keys), via balanced brackets."""
    depth = 0
    quote: str | None = None
    escaped = False
    for j in range(start, min(len(text), start + 20000)):
        c = text[j]
        if quote:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == quote:
                quote = None
            continue
        if c in "'\"":
            quote = c
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                span = text[start : j + 1]
                try:
                    return ast.literal_eval(span), j + 1
                except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
                    pass
                try:  # JSON with a trailing comma
                    return json.loads(_TRAILING_COMMA.sub(r"\1", span)), j + 1
                except ValueError:
                    return None, start
    return None, start


def extract_json(text: str) -> dict[str, Any] | None:
    """The JSON object in a judge's reply: the last top-level object in the text (the whole text, a
    fenced block, or one embedded in prose). None when there is none."""
    for obj, _, _ in reversed(json_objects(text)):
        if isinstance(obj, dict):
            return obj
    return None
