"""Checks of a run's options before anything runs: numbers finite and in range, thresholds within a
metric's scale, column mappings naming an input some metric takes.

Every check raises :class:`~touchstone.errors.InputValidationError` naming the option, the value
and what was expected, so a front end reports it as bad input (exit status 2 on the command line)
before a run is created or a judge is called.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from touchstone.errors import InputValidationError, Problem

_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*[-/]\s*(-?\d+(?:\.\d+)?)\s*(?:\(float\))?\s*$")
_AT_LEAST = re.compile(r"^\s*>=\s*(-?\d+(?:\.\d+)?)\s*$")


def check_number(
    value: float | int | None,
    option: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    above: float | None = None,
    name: str | None = None,
) -> None:
    """``value`` (None: not given) must be a finite number, at least ``minimum``, above ``above`` and
    at most ``maximum``."""
    if value is None:
        return
    expected = _expectation(minimum, maximum, above)
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    if ok:
        ok = (minimum is None or value >= minimum) and (maximum is None or value <= maximum)
        ok = ok and (above is None or value > above)
    if not ok:
        raise InputValidationError([Problem(option, None, name, f"expected {expected}, got {value!r}")])


def _expectation(minimum: float | None, maximum: float | None, above: float | None) -> str:
    if minimum is not None and maximum is not None:
        return f"a number from {minimum:g} to {maximum:g}"
    if above is not None:
        return f"a finite number above {above:g}"
    if minimum is not None:
        return f"a finite number of at least {minimum:g}"
    return "a finite number"


def check_finite(values: Mapping[str, float], option: str) -> None:
    """Every value of a ``NAME=NUMBER`` option finite (``nan`` or ``inf`` would switch a gate off)."""
    for name, value in values.items():
        check_number(value, option, name=name)


def metric_scale(value_range: str) -> tuple[float, float]:
    """The (low, high) bounds of a metric's declared range (``"1-5"``, ``"0-1"``, ``"0/1"``,
    ``">= 0"``); (-inf, inf) when the text declares no single numeric range."""
    match = _RANGE.match(value_range or "")
    if match:
        return float(match.group(1)), float(match.group(2))
    match = _AT_LEAST.match(value_range or "")
    if match:
        return float(match.group(1)), math.inf
    return -math.inf, math.inf


def check_thresholds(
    evaluators: Mapping[str, Any], thresholds: Mapping[str, float], option: str = "--threshold"
) -> None:
    """Each threshold finite and within its metric's scale (a threshold of 7 on a 1–5 metric would
    fail every row; -1 would pass every row)."""
    for name, value in thresholds.items():
        check_number(value, option, name=name)
        ev = evaluators.get(name)
        info = getattr(ev, "info", None)
        low, high = metric_scale(str(getattr(info, "value_range", "") or ""))
        if not low <= value <= high:
            raise InputValidationError(
                [Problem(option, None, name, f"expected a threshold from {low:g} to {high:g} "
                                             f"(the metric's scale), got {value:g}")]
            )


def check_mapped_inputs(evaluators: Mapping[str, Any], evaluator_config: Mapping[str, Any]) -> None:
    """A default column mapping (``--map INPUT=COLUMN``) must name an input that at least one chosen
    metric takes: otherwise it would be ignored silently and judge calls spent on the wrong data."""
    default = evaluator_config.get("default") or {}
    mapping = default.get("column_mapping") or {} if isinstance(default, Mapping) else {}
    taken: set[str] = set()
    for ev in evaluators.values():
        specs = getattr(ev, "inputs", None)
        if specs is None:
            return  # a metric whose inputs are not declared may take anything
        taken.update(getattr(spec, "name", str(spec)) for spec in specs)
    unknown = [name for name in mapping if name not in taken]
    if unknown:
        accepted = ", ".join(sorted(taken)) or "(none)"
        problems = [
            Problem("--map", None, name, f"no chosen metric takes an input {name!r}; inputs: {accepted}")
            for name in unknown
        ]
        raise InputValidationError(problems)


def check_text(value: str | None, option: str) -> None:
    """A text option (a run name, a file name) must be valid Unicode: bytes that are not UTF-8 in a
    command line arrive as lone surrogates, which no store, file or terminal can hold."""
    if value is None:
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputValidationError(
            [Problem(option, None, None, f"not valid UTF-8 at character {exc.start + 1}: {value!a}; "
                                         "use UTF-8 text (rename the file if it is a file name)")]
        ) from None
