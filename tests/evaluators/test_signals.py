"""latency and user_satisfaction from logged columns: satisfaction equals its definition on many
values (thumbs, booleans, 0-1, 1-5 ratings), bad values fail the row with what is accepted."""

from __future__ import annotations

import random

import pytest

from touchstone.evaluators import registry
from touchstone.evaluators.signals import satisfaction


def test_satisfaction_definition_on_random_values() -> None:
    rng = random.Random(2)
    for _ in range(500):
        low = float(rng.randint(0, 3))
        high = low + rng.randint(1, 9)
        x = rng.uniform(low, high)
        expected = x if (0 <= x < 1 and low >= 1) else (x - low) / (high - low)
        assert satisfaction(x, (low, high)) == pytest.approx(expected)
    for word in ("up", "👍", "Positive", "true", "liked"):
        assert satisfaction(word) == 1.0
    for word in ("down", "👎", "negative", "no", "dislike"):
        assert satisfaction(word) == 0.0
    assert satisfaction(True) == 1.0 and satisfaction(False) == 0.0
    assert satisfaction(5) == 1.0 and satisfaction(1) == 0.0 and satisfaction(4) == 0.75
    assert satisfaction("3") == 0.5 and satisfaction(0.25) == 0.25
    for bad in ("meh", 7, -1, None, float("nan")):
        with pytest.raises(ValueError, match="not a thumbs up/down"):
            satisfaction(bad)


def test_user_satisfaction_metric() -> None:
    ev = registry.create("user_satisfaction")
    assert ev(feedback="up")["user_satisfaction_result"] == "pass"
    assert ev(feedback=2)["user_satisfaction"] == 0.25
    failed = ev(feedback="meh")
    assert "not a thumbs up/down" in failed["user_satisfaction_error"]
    ten = registry.create("user_satisfaction", rating_scale=(1, 10))
    assert ten(feedback=10)["user_satisfaction"] == 1.0


def test_latency_metric() -> None:
    ev = registry.create("latency", threshold=2.0)
    assert ev(latency=1.5)["latency"] == 1.5
    assert ev(latency=1.5)["latency_result"] == "pass"  # lower is better
    assert ev(latency=3)["latency_result"] == "fail"
    assert ev(latency="0.8")["latency"] == 0.8
    assert "not a non-negative number" in ev(latency=-1)["latency_error"]
    assert registry.get("latency").tier == "free" and not registry.get("latency").needs_judge
