"""Tolerant parsing of judge replies that are not (or not only) JSON.

Used when a server does not honour the JSON-schema response format: the reply may wrap its JSON in a
code fence, add prose around it, or use single quotes. :func:`extract_json` finds the object; it never
invents one.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)


def _balanced_objects(text: str) -> list[str]:
    """Every top-level ``{...}`` span of ``text`` (braces inside strings are skipped)."""
    spans: list[str] = []
    depth, start, in_str, quote, escape = 0, -1, False, "", False
    for i, ch in enumerate(text):
        if in_str:
            if escape:
                escape = False
            elif ch == "\\":
                escape = True
            elif ch == quote:
                in_str = False
            continue
        if ch in "\"'" and depth > 0:
            in_str, quote = True, ch
        elif ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _loads(candidate: str) -> dict[str, Any] | None:
    candidate = candidate.strip()
    try:
        value = json.loads(candidate)
    except ValueError:
        try:
            value = ast.literal_eval(candidate)  # single quotes, True/False, trailing commas
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            cleaned = re.sub(r",\s*([}\]])", r"\1", candidate)
            try:
                value = json.loads(cleaned)
            except ValueError:
                return None
    return value if isinstance(value, dict) else None


def extract_json(text: str) -> dict[str, Any] | None:
    """The JSON object in a judge's reply: the whole text, a fenced block, or the last balanced
    ``{...}`` that parses. None when there is none."""
    whole = _loads(text)
    if whole is not None:
        return whole
    for block in reversed(_FENCE.findall(text)):
        found = _loads(block)
        if found is not None:
            return found
    for span in reversed(_balanced_objects(text)):
        found = _loads(span)
        if found is not None:
            return found
    return None
