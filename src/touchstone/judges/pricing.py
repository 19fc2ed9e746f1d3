"""Prices of judge models (USD per million tokens), to turn token counts into cost.

A small table of common models; a model is matched by its exact name, else by the longest listed name
it starts with (``gpt-4o-mini-2024-07-18`` -> ``gpt-4o-mini``). Override or extend it per run with
``JudgeSettings.prices`` (``{"my-model": (input, output)}``) or ``$TOUCHSTONE_PRICES`` (a JSON object of
the same shape). A model with no known price has no cost figure (``None``), never a made-up one.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

# (input, output) USD per 1M tokens, list prices as published by the providers (standard tier).
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4-turbo": (10.00, 30.00),
    "gpt-35-turbo": (0.50, 1.50),
    "gpt-3.5-turbo": (0.50, 1.50),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o1": (15.00, 60.00),
    "o3": (2.00, 8.00),
    "o3-mini": (1.10, 4.40),
    "o4-mini": (1.10, 4.40),
    "text-embedding-3-small": (0.02, 0.0),
    "text-embedding-3-large": (0.13, 0.0),
    "text-embedding-ada-002": (0.10, 0.0),
}


def _env_prices() -> dict[str, tuple[float, float]]:
    raw = os.environ.get("TOUCHSTONE_PRICES")
    if not raw:
        return {}
    try:
        data = json.loads(raw)
        return {str(k): (float(v[0]), float(v[1])) for k, v in data.items()}
    except (ValueError, TypeError, IndexError, KeyError):
        return {}


def price_for(
    model: str, overrides: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, float] | None:
    """``(input, output)`` USD per million tokens for ``model``, or None when unknown."""
    table = {**PRICES, **_env_prices(), **(overrides or {})}
    name = model.lower()
    if name in table:
        return table[name]
    for key in sorted(table, key=len, reverse=True):
        if name.startswith(key.lower()):
            return table[key]
    return None


def cost_usd(
    model: str,
    prompt_tokens: int,
    completion_tokens: int,
    overrides: Mapping[str, tuple[float, float]] | None = None,
) -> float | None:
    """Cost of a call in USD, or None when the model's price is unknown."""
    price = price_for(model, overrides)
    if price is None:
        return None
    return (prompt_tokens * price[0] + completion_tokens * price[1]) / 1_000_000
