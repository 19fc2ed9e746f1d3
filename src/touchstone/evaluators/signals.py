"""Metrics read from signals the application already logged, no judge and no model: ``latency`` (a
response time column) and ``user_satisfaction`` (a feedback column: thumbs, likes, 1-5 stars).
They make production-monitoring and chatbot presets useful on logged traffic at no cost."""

from __future__ import annotations

import math
from typing import Any, ClassVar

from touchstone.evaluators.base import Evaluator, InputSpec
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

_POSITIVE = frozenset({"up", "thumbs_up", "thumbsup", "positive", "like", "liked", "good", "yes", "true",
                       "helpful", "satisfied", "+1", "👍"})
_NEGATIVE = frozenset({"down", "thumbs_down", "thumbsdown", "negative", "dislike", "disliked", "bad", "no",
                       "false", "unhelpful", "unsatisfied", "dissatisfied", "-1", "👎"})


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def satisfaction(value: Any, scale: tuple[float, float] = (1.0, 5.0)) -> float:
    """A feedback value as satisfaction in [0, 1]: True / thumbs up / like -> 1, their opposites -> 0;
    a rating on ``scale`` (1-5 stars by default) as ``(x - low) / (high - low)``, and, when the scale
    starts at 1 or above, a number in [0, 1) as it is (a share: 0.25 is 0.25, while 1 is one star).
    Anything else raises ValueError naming what is accepted."""
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    number = _number(value)
    if number is None and isinstance(value, str):
        word = value.strip().lower()
        if word in _POSITIVE:
            return 1.0
        if word in _NEGATIVE:
            return 0.0
        try:
            number = float(word)
        except ValueError:
            number = None
    if number is not None:
        low, high = scale
        if 0.0 <= number < 1.0 and low >= 1.0:  # a share below the ratings' range (1 is one star)
            return number
        if low <= number <= high:
            return (number - low) / (high - low)
    raise ValueError(
        f"feedback {value!r} is not a thumbs up/down, a boolean, a number in 0-1 or a rating in "
        f"{scale[0]:g}-{scale[1]:g}"
    )


@register
class LatencyEvaluator(Evaluator):
    """The application's response time as logged in a ``latency`` column (in its own unit), so the
    summary reports its mean; with ``threshold``, a row passes when its latency is at most that."""

    metric = "latency"
    prefix = "latency"
    score_key = "latency"
    inputs = (InputSpec("latency", "any", description="response time of the row (seconds or ms)"),)
    description = "logged response time (a latency column), lower is better"
    value_range = ">= 0"
    higher_is_better = False
    default_threshold: ClassVar[float | None] = None

    def _score(self, **inputs: Any) -> Outcome:
        value = _number(inputs["latency"])
        if value is None and isinstance(inputs["latency"], str):
            try:
                value = float(inputs["latency"])
            except ValueError:
                value = None
        if value is None or value < 0:
            return self.failure(f"latency {inputs['latency']!r} is not a non-negative number")
        return self.result(value)


@register
class UserSatisfactionEvaluator(Evaluator):
    """Satisfaction from a ``feedback`` column (see :func:`satisfaction`): its mean is the share of
    satisfied users; a row passes at ``threshold`` (0.5 by default)."""

    metric = "user_satisfaction"
    prefix = "user_satisfaction"
    score_key = "user_satisfaction"
    inputs = (InputSpec("feedback", "any", description="thumbs up/down, a boolean or a 1-5 rating"),)
    description = "satisfaction from logged user feedback (thumbs or 1-5 ratings) as 0-1"
    value_range = "0-1"
    default_threshold: ClassVar[float | None] = 0.5

    def __init__(
        self, *, threshold: float | None = 0.5, rating_scale: tuple[float, float] = (1.0, 5.0)
    ) -> None:
        super().__init__(threshold=threshold)
        self.rating_scale = (float(rating_scale[0]), float(rating_scale[1]))
        if not self.rating_scale[0] < self.rating_scale[1]:
            raise ValueError(f"rating_scale must be (low, high) with low < high, got {rating_scale!r}")

    def options(self) -> dict[str, Any]:
        return {**super().options(), "rating_scale": list(self.rating_scale)}

    def _score(self, **inputs: Any) -> Outcome:
        try:
            return self.result(satisfaction(inputs["feedback"], self.rating_scale))
        except ValueError as exc:
            return self.failure(str(exc))
