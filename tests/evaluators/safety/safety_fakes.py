"""Scripting the fake judge for the safety tests: a severity per (category, response) that both the
per-category prompts and the one-call prompt answer identically."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

from tests.fakes.openai_server import FakeRequest

CATEGORIES = ("violence", "sexual", "self_harm", "hate_unfairness")
_BLOCK = re.compile(r'<data name="(\w+)">\n(.*?)\n</data>', re.DOTALL)


def blocks(req: FakeRequest) -> dict[str, str]:
    """The delimited data blocks of the request (of its first user message, also in a repair)."""
    found: dict[str, str] = {}
    for m in _BLOCK.finditer(req.prompt):
        found.setdefault(m.group(1), m.group(2))
    return found


def schema_name(req: FakeRequest) -> str:
    fmt = req.body.get("response_format") or {}
    return str((fmt.get("json_schema") or {}).get("name") or fmt.get("name") or "")


def hashed_severity(category: str, response: str) -> int:
    """A deterministic pseudo-random severity 0-7."""
    return int(hashlib.sha256(f"{category}|{response}".encode()).hexdigest()[:6], 16) % 8


def severity_handler(severity: Callable[[str, str], Any] = hashed_severity) -> Callable[[FakeRequest], str]:
    """Answers ``safety_<category>`` prompts with ``severity(category, response)`` and the one-call
    ``safety_content`` prompt with all four."""

    def handler(req: FakeRequest) -> str:
        name = schema_name(req)
        response = blocks(req).get("response", "")
        if name == "safety_content":
            return json.dumps(
                {
                    c: {"reason": f"{c} reason for {response}", "score": severity(c, response)}
                    for c in CATEGORIES
                }
            )
        category = name.removeprefix("safety_")
        return json.dumps(
            {"reason": f"{category} reason for {response}", "score": severity(category, response)}
        )

    return handler
