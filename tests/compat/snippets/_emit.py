"""Shared by the compatibility snippets: print one result as a typed, deterministic JSON line.

Every leaf of the result becomes ``path -> [type, value]`` in one flat object, the path written as a
JSON pointer (``/rows/0/outputs.f1.f1_score``; ``/`` inside a key is written ``~1``, ``~`` as
``~0``). Types are the JSON types as Python has them: ``int``, ``float``, ``bool``, ``str``,
``null``; empty containers are leaves of type ``object`` / ``array``; NaN and infinities are floats
written as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; numpy scalars count as the Python
type they stand for; anything else is ``other:<class name>`` with its ``str()``.

Determinism: the snippet's temporary folder is replaced by ``<tmp>`` in every string, and the values
of keys that carry a whole prompt (``sample_input``, ``sample_output``) by ``"<elided>"`` (their type
is kept). The line is prefixed with :data:`PREFIX` so that a harness finds it after anything the
library under test printed.
"""

from __future__ import annotations

import json
import math
from typing import Any

PREFIX = "COMPAT-JSON: "
ELIDED_KEYS = frozenset({"sample_input", "sample_output"})


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _leaf(value: Any, tmp: str | None) -> list[Any]:
    if value is None:
        return ["null", None]
    if isinstance(value, bool):
        return ["bool", value]
    if isinstance(value, int):
        return ["int", int(value)]
    if isinstance(value, float):
        number = float(value)
        if math.isnan(number):
            return ["float", "NaN"]
        if math.isinf(number):
            return ["float", "Infinity" if number > 0 else "-Infinity"]
        return ["float", number]
    if isinstance(value, str):
        return ["str", value.replace(tmp, "<tmp>") if tmp else value]
    module = type(value).__module__
    if module == "numpy":  # numpy scalars read as the Python value they carry
        return _leaf(value.item(), tmp)
    text = str(value)
    return [f"other:{type(value).__name__}", text.replace(tmp, "<tmp>") if tmp else text]


def flatten(
    value: Any, tmp: str | None = None, path: str = "", out: dict[str, list[Any]] | None = None
) -> dict[str, list[Any]]:
    """``value`` as ``{json_pointer: [type, value]}``; see the module docstring."""
    out = {} if out is None else out
    if isinstance(value, dict):
        if not value:
            out[path] = ["object", {}]
        for key, item in value.items():
            child = f"{path}/{_escape(str(key))}"
            if str(key) in ELIDED_KEYS and isinstance(item, str):
                out[child] = ["str", "<elided>"]
            else:
                flatten(item, tmp, child, out)
        return out
    if isinstance(value, (list, tuple)):
        if not value:
            out[path] = ["array", []]
        for i, item in enumerate(value):
            flatten(item, tmp, f"{path}/{i}", out)
        return out
    out[path] = _leaf(value, tmp)
    return out


def emit(value: Any, tmp: str | None = None) -> None:
    """Print ``value`` flattened (see :func:`flatten`) as the snippet's last line."""
    print(PREFIX + json.dumps(flatten(value, tmp), sort_keys=True), flush=True)


def error_info(exc: BaseException, *, with_type: bool = False) -> dict[str, Any]:
    """What a snippet reports about an exception it caught: its category and blame (by name) where
    the exception carries them, and its class name only when ``with_type`` (touchstone's errors may
    be subclasses of the SDK's with names of their own)."""
    info: dict[str, Any] = {"type": type(exc).__name__} if with_type else {"caught": True}
    for attr in ("category", "blame"):
        value = getattr(exc, attr, None)
        if value is not None:
            info[attr] = getattr(value, "name", str(value))
    return info
