"""Defect rate at a chosen level and rate per level equal their definitions on random runs (failed
rows counted apart and excluded from the denominator); Wilson intervals equal scipy's."""

from __future__ import annotations

import random

import numpy as np
import pytest
from scipy.stats import binomtest

from touchstone.evaluators.base import MetricInfo
from touchstone.scores import ErrorInfo, Outcome, Score
from touchstone.stats.aggregate import summarize
from touchstone.stats.aggregators import ScoreColumn, defect_rate, rate_per_level, wilson_interval


@pytest.mark.parametrize("n", [1, 2, 3, 7, 10, 29, 100, 1000])
def test_wilson_interval_equals_scipy(n: int) -> None:
    for k in sorted({0, 1, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
        ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        lo, hi = wilson_interval(k, n)
        assert lo == pytest.approx(ci.low, abs=1e-12) and hi == pytest.approx(ci.high, abs=1e-12)


def test_wilson_interval_random_and_empty() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 5000)
        k = rng.randint(0, n)
        ci = binomtest(k, n).proportion_ci(method="wilson")
        assert wilson_interval(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert all(np.isnan(wilson_interval(0, 0)))


def random_run(rng: random.Random) -> tuple[list[int | None], int]:
    """Severities per row (None: the row failed) and a defect level."""
    n = rng.randint(0, 60)
    rows: list[int | None] = [None if rng.random() < 0.15 else rng.randint(0, 7) for _ in range(n)]
    return rows, rng.randint(1, 7)


def test_defect_and_level_rates_equal_their_definitions_on_random_runs() -> None:
    rng = random.Random(2024)
    info = MetricInfo(
        "violence",
        "violence",
        "violence",
        higher_is_better=False,
        default_threshold=3,
        aggregators=("mean", "defect_rate", "rate_per_level"),
    )
    for _ in range(300):
        rows, level = random_run(rng)
        outcomes = [
            Outcome(
                [Score.failed("violence", ErrorInfo("judge_reply", "no severity"))], {"violence_error": "x"}
            )
            if s is None
            else Outcome([Score("violence", float(s), passed=s <= 3, threshold=3)])
            for s in rows
        ]
        summary = summarize(
            {"violence": info},
            {"violence": outcomes},
            options={"violence": {"defect_level": level, "levels": list(range(8))}},
        )
        entry = summary["violence.violence"]
        scored = [s for s in rows if s is not None]
        n_failed = len(rows) - len(scored)
        assert entry["n_failed"] == n_failed and entry["n"] == len(scored)
        k = sum(1 for s in scored if s >= level)
        assert entry["n_defects"] == k and entry["defect_level"] == level
        if scored:
            assert entry["defect_rate"] == k / len(scored)
            ci = binomtest(k, len(scored)).proportion_ci(method="wilson")
            assert entry["defect_rate_ci95"] == pytest.approx([ci.low, ci.high], abs=1e-12)
        else:
            assert entry["defect_rate"] is None and entry["defect_rate_ci95"] == [None, None]
        assert entry["count_per_level"] == {str(v): scored.count(v) for v in range(8)}
        if scored:
            for v in range(8):
                assert entry["rate_per_level"][str(v)] == scored.count(v) / len(scored)
                ci = binomtest(scored.count(v), len(scored)).proportion_ci(method="wilson")
                assert entry["rate_per_level_ci95"][str(v)] == pytest.approx([ci.low, ci.high], abs=1e-12)
            assert sum(entry["rate_per_level"].values()) == pytest.approx(1.0)


def test_aggregators_directly() -> None:
    col = ScoreColumn(values=np.array([0.0, 4.0, 5.0, 7.0, 3.0]), n_failed=2, options={"defect_level": 5})
    out = defect_rate(col)
    assert out["defect_rate"] == 0.4 and out["n_defects"] == 2 and out["n_failed"] == 2
    assert defect_rate(ScoreColumn(values=np.array([0.0, 4.0])))["defect_level"] == 4.0  # the default
    levels = rate_per_level(ScoreColumn(values=np.array([1.0, 1.2, 6.0]), n_failed=1))
    assert levels["count_per_level"] == {"1": 2, "6": 1} and levels["n_failed"] == 1
    assert rate_per_level(ScoreColumn(values=np.array([]), options={"levels": [0, 1]}))[
        "count_per_level"
    ] == {"0": 0, "1": 0}
