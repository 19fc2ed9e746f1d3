"""Tumbling time windows: durations such as ``30m``, window starts, and ISO 8601 timestamps."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from touchstone.errors import InputValidationError, Problem

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")


def parse_duration(text: str, option: str = "--window", minimum: int = 1) -> int:
    """Seconds in a duration written as a number and a unit (``90s``, ``30m``, ``1h``, ``1d``), at
    least ``minimum``."""
    match = _DURATION.match(text or "")
    seconds = float(match.group(1)) * _UNITS[match.group(2)] if match else 0.0
    if not match or seconds < minimum or seconds != int(seconds):
        raise InputValidationError(
            [
                Problem(
                    option,
                    None,
                    None,
                    f"expected a duration such as 30m, 1h or 1d (s, m, h, d), got {text!r}",
                )
            ]
        )
    return int(seconds)


def window_start(timestamp: float, width: int) -> int:
    """The start (Unix seconds) of the tumbling window of ``width`` seconds holding ``timestamp``.

    Windows are aligned on the Unix epoch (UTC), so an hour window starts on the hour."""
    return int(timestamp // width) * width


def parse_timestamp(value: object) -> float:
    """Unix seconds from an ISO 8601 text (``Z`` or an offset; a time without one is UTC).

    Raises ValueError saying what was expected."""
    if not isinstance(value, str):
        raise ValueError(f"expected an ISO 8601 text, got {type(value).__name__}")
    text = value.strip()
    if text.endswith(("Z", "z")):
        text = text[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise ValueError(
            f"expected an ISO 8601 timestamp such as 2025-05-01T12:00:00Z, got {value!r}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def iso(seconds: float) -> str:
    """An ISO 8601 UTC text (``2025-05-01T12:00:00Z``) for Unix seconds."""
    moment = datetime.fromtimestamp(seconds, tz=timezone.utc)
    text = moment.isoformat(timespec="microseconds" if seconds % 1 else "seconds")
    return text.replace("+00:00", "Z")
