"""What judge calls cost: per score (the engine's accounting context) and per session (its counters).

The engine runs each score inside a context where :data:`current_usage` is a fresh dict; the judge
session adds to it whatever the score's calls cost (calls, tokens, cache hits, retries, cost), and
the engine stores it beside the score. The variable lives here, below both, so the judges never
import the engine.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import Any

from touchstone.judges.pricing import cost_usd

current_usage: ContextVar[dict[str, Any] | None] = ContextVar("touchstone_current_usage", default=None)
"""The accounting of the score being computed (None outside a score)."""


def add_usage(**amounts: float) -> None:
    """Add ``amounts`` (e.g. ``calls=1, prompt_tokens=120``) to the accounting of the current score."""
    usage = current_usage.get()
    if usage is None:
        return
    for key, value in amounts.items():
        usage[key] = usage.get(key, 0) + value


class Accounting:
    """A session's counters (reported with the run), each amount also added to the current score."""

    __slots__ = ("_prices", "stats")

    def __init__(self, prices: dict[str, tuple[float, float]]) -> None:
        self._prices = prices
        self.stats: dict[str, float] = {
            "calls": 0,
            "cache_hits": 0,
            "retries": 0,
            "rate_limited": 0,
            "failed_calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "cost_usd": 0.0,
        }

    def count(self, **amounts: float) -> None:
        """Add ``amounts`` to the session's counters and to the current score's."""
        stats = self.stats
        for key, value in amounts.items():
            stats[key] = stats.get(key, 0) + value
        add_usage(**amounts)

    def reply(self, model: str, prompt: int, completion: int | None) -> None:
        """Tokens and cost of one reply (``completion`` None: a call that generates nothing)."""
        amounts: dict[str, float] = {"prompt_tokens": prompt}
        if completion is not None:
            amounts["completion_tokens"] = completion
        cost = cost_usd(model, prompt, completion or 0, self._prices)
        if cost is not None:
            amounts["cost_usd"] = cost
        self.count(**amounts)
