"""Names the compatible SDK's users import from ``azure.ai.evaluation._constants`` (a private module
there, but used in its samples): the conversation aggregation types.

The SDK's judge evaluators accept ``conversation_aggregation_type=`` and ignore it (their
conversations are always aggregated by the mean), and so do touchstone's; touchstone's own option is
``conversation_aggregation="mean" | "min" | "max"``."""

from __future__ import annotations

import enum


class _AggregationType(enum.Enum):
    """How per-turn numbers of a conversation combine into one (the SDK's values)."""

    MEAN = "mean"
    MAX = "max"
    MIN = "min"
    SUM = "sum"
    CUSTOM = "custom"


AggregationType = _AggregationType

__all__ = ["AggregationType", "_AggregationType"]
