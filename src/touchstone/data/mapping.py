"""Column mapping: which row field feeds which evaluator input.

``{"column_mapping": {"query": "${data.q}", "response": "${target.response}"}}``, per evaluator name
or under ``"default"``, as in ``azure-ai-evaluation``. An input without a mapping is looked up by its
own name: first in the target's outputs, then in the data, then under its older alias
(``question`` for ``query``, ``answer`` for ``response``); ``conversation`` also accepts a row with
top-level ``messages`` (SPEC 2.2).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from touchstone.errors import InputValidationError, Problem

ALIASES: dict[str, tuple[str, ...]] = {"query": ("question",), "response": ("answer",)}
_REF = re.compile(r"^\$\{(data|target|run\.outputs)\.([^{}]+)\}$")
_MISSING = object()


@dataclass(frozen=True)
class Ref:
    """Where an input comes from: ``data``, ``target`` or ``auto`` (by name, with aliases)."""

    origin: Literal["data", "target", "auto"]
    path: tuple[str, ...]

    @property
    def column(self) -> str:
        return ".".join(self.path)

    def __str__(self) -> str:
        return self.column if self.origin == "auto" else "${" + f"{self.origin}.{self.column}" + "}"


def parse_ref(text: str, where: str) -> Ref:
    match = _REF.match(text.strip()) if isinstance(text, str) else None
    if not match:
        raise InputValidationError(
            [
                Problem(
                    where,
                    None,
                    None,
                    f"invalid column mapping {text!r}; "
                    'expected "${data.<column>}" or "${target.<column>}"',
                )
            ]
        )
    origin = "target" if match.group(1) in ("target", "run.outputs") else "data"
    return Ref(origin, tuple(match.group(2).split(".")))  # type: ignore[arg-type]


def evaluator_mappings(
    names: list[str], evaluator_config: Mapping[str, Any] | None
) -> dict[str, dict[str, Ref]]:
    """Per evaluator name, the explicit mappings (default merged under the evaluator's own)."""
    config = dict(evaluator_config or {})
    unknown = sorted(set(config) - set(names) - {"default"})
    if unknown:
        raise InputValidationError(
            [
                Problem(
                    "evaluator_config",
                    None,
                    unknown[0],
                    f"no evaluator named {unknown[0]!r}; evaluators are {names}",
                )
            ]
        )

    def refs(key: str) -> dict[str, Ref]:
        entry = config.get(key) or {}
        if not isinstance(entry, Mapping):
            raise InputValidationError(
                [Problem("evaluator_config", None, key, "expected an object with column_mapping")]
            )
        mapping = entry.get("column_mapping") or {}
        return {
            inp: parse_ref(val, f"evaluator_config.{key}.column_mapping.{inp}")
            for inp, val in mapping.items()
        }

    default = refs("default")
    return {name: {**default, **refs(name)} for name in names}


def lookup(obj: Mapping[str, Any] | None, path: tuple[str, ...]) -> Any:
    cur: Any = obj
    for part in path:
        if not isinstance(cur, Mapping) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def resolve(
    name: str, ref: Ref | None, data: Mapping[str, Any], target_out: Mapping[str, Any] | None
) -> tuple[bool, Any, str]:
    """Return (found, value, field name in the data or target) for input ``name``."""
    if ref is not None and ref.origin != "auto":
        source = target_out if ref.origin == "target" else data
        value = lookup(source, ref.path)
        return (
            (value is not _MISSING and value is not None),
            (None if value is _MISSING else value),
            ref.column,
        )
    if target_out is not None and target_out.get(name) is not None:
        return True, target_out[name], name
    for candidate in (name, *ALIASES.get(name, ())):
        if data.get(candidate) is not None:
            return True, data[candidate], candidate
    if name == "conversation" and isinstance(data.get("messages"), list):
        conv: dict[str, Any] = {"messages": data["messages"]}
        if data.get("context") is not None:
            conv["context"] = data["context"]
        return True, conv, "messages"
    return False, None, name


def is_missing(value: Any) -> bool:
    return value is _MISSING
