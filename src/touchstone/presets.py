"""Presets by use case and stage, and cost tiers, for Python users::

    from touchstone import presets
    plan = presets.resolve("rag", columns={"query", "context", "response"})
    plan.metrics   # ['faithfulness', 'answer_relevancy', 'context_relevance']
    plan.dropped   # [DroppedMetric('ranking', 'needs the column(s) ...; missing: ...')]

See :mod:`touchstone.engine.presets` (the table) and ``touchstone presets`` (the command)."""

from touchstone.engine.presets import (
    PRESETS,
    TIERS,
    DroppedMetric,
    Preset,
    PresetMetric,
    PresetPlan,
    describe_presets,
    filter_by_tier,
    resolve,
)

__all__ = [
    "PRESETS",
    "TIERS",
    "DroppedMetric",
    "Preset",
    "PresetMetric",
    "PresetPlan",
    "describe_presets",
    "filter_by_tier",
    "resolve",
]
