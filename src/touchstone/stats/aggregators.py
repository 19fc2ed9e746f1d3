"""Aggregators: named functions from one metric's scores over the rows to summary figures.

A metric declares the aggregators its summary uses by name (``MetricInfo.aggregators``); each gets the
column of a score over the rows (:class:`ScoreColumn`: the values that were obtained, the pass flags,
how many rows failed) and returns the figures it adds to that score's summary entry. Adding an
aggregation (a defect rate at a severity, a rate per level) is one function and one registry line;
nothing reads output-key suffixes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

BOOTSTRAP_RESAMPLES = 1000
BOOTSTRAP_SEED = 20240607


@dataclass
class ScoreColumn:
    """One score of one evaluator over the rows of a run."""

    values: np.ndarray
    """The values that were obtained (failed rows excluded), as floats."""
    passed: list[bool] = field(default_factory=list)
    """Pass flags of the rows that have one (a threshold was set)."""
    n_failed: int = 0
    """Rows of the evaluator whose score could not be obtained."""
    n_rows: int = 0
    higher_is_better: bool = True
    options: Mapping[str, Any] = field(default_factory=dict)
    """Aggregator options (e.g. ``defect_level``)."""


Aggregator = Callable[[ScoreColumn], dict[str, Any]]
_AGGREGATORS: dict[str, Aggregator] = {}


def aggregator(name: str) -> Callable[[Aggregator], Aggregator]:
    """Register an aggregator under ``name``."""

    def register(fn: Aggregator) -> Aggregator:
        _AGGREGATORS[name] = fn
        return fn

    return register


def get_aggregator(name: str) -> Aggregator:
    try:
        return _AGGREGATORS[name]
    except KeyError:
        raise KeyError(f"unknown aggregator {name!r}; known: {', '.join(sorted(_AGGREGATORS))}") from None


def aggregator_names() -> list[str]:
    return sorted(_AGGREGATORS)


def bootstrap_ci(
    values: np.ndarray, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean; seeded, so the same values give the same interval.

    Each resample draws ``n`` values with replacement. When the values take few distinct levels (pass
    flags, 1-5 ratings, F1 of short answers) a resample is drawn as multinomial counts of the levels,
    which has exactly the same distribution as drawing indices and costs O(levels) instead of O(n)."""
    n = len(values)
    if n == 0:
        return (math.nan, math.nan)
    if n == 1 or float(values.min()) == float(values.max()):
        v = float(values[0])
        return (v, v)
    rng = np.random.default_rng(seed)
    levels, counts = np.unique(values, return_counts=True)
    if len(levels) * 16 <= n:
        draws = rng.multinomial(n, counts / n, size=resamples)
        means = draws @ levels / n
    else:
        means = np.empty(resamples)
        chunk = max(1, min(resamples, 4_000_000 // n))  # bound memory to ~32 MB of indices
        for start in range(0, resamples, chunk):
            stop = min(resamples, start + chunk)
            idx = rng.integers(0, n, size=(stop - start, n))
            means[start:stop] = values[idx].mean(axis=1)
    alpha = (1 - level) / 2
    lo, hi = np.quantile(means, [alpha, 1 - alpha])
    return (float(lo), float(hi))


@aggregator("mean")
def mean_with_ci(col: ScoreColumn) -> dict[str, Any]:
    """Mean, 95% percentile-bootstrap interval and standard deviation; ``None`` when nothing scored."""
    arr = col.values
    n = len(arr)
    if n == 0:
        return {"mean": None, "ci95": [None, None], "std": None}
    return {
        "mean": float(arr.mean()),
        "ci95": list(bootstrap_ci(arr)),
        "std": float(arr.std(ddof=1)) if n > 1 else 0.0,
    }


@aggregator("pass_rate")
def pass_rate(col: ScoreColumn) -> dict[str, Any]:
    """Share of the rows with a pass flag that passed (only when the metric has a threshold)."""
    if not col.passed:
        return {}
    n_passed = sum(col.passed)
    return {"pass_rate": n_passed / len(col.passed), "n_passed": n_passed}


@aggregator("total")
def total(col: ScoreColumn) -> dict[str, Any]:
    """Sum of the values over the rows that scored (e.g. claims checked over the run)."""
    return {"total": float(col.values.sum())} if len(col.values) else {"total": 0.0}


WILSON_Z95 = NormalDist().inv_cdf(0.975)


def wilson_interval(k: int, n: int, z: float = WILSON_Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion ``k / n`` (95% by default; no continuity correction):
    ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``, clipped to [0, 1]. The same interval as
    scipy's ``binomtest(k, n).proportion_ci(method="wilson")``. ``(nan, nan)`` when ``n`` is 0."""
    if n <= 0:
        return (math.nan, math.nan)
    p = k / n
    z2 = z * z
    denominator = 1 + z2 / n
    center = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    # at k = 0 and k = n the bound is exactly 0 or 1 (rounding would leave a hair's breadth)
    lo = 0.0 if k == 0 else max(0.0, center - half)
    hi = 1.0 if k == n else min(1.0, center + half)
    return (lo, hi)


def _interval(k: int, n: int) -> list[float | None]:
    lo, hi = wilson_interval(k, n)
    return [None, None] if math.isnan(lo) else [lo, hi]


@aggregator("defect_rate")
def defect_rate(col: ScoreColumn) -> dict[str, Any]:
    """Share of the scored rows at or above a severity (``defect_level``, default 4: Medium): the
    risk-and-safety metrics' headline figure, with its Wilson 95% interval, the number of defects and
    the number of failed rows (counted apart: a failed row is in neither the numerator nor the
    denominator)."""
    level = float(col.options.get("defect_level", 4))
    n = len(col.values)
    k = int((col.values >= level).sum()) if n else 0
    return {
        "defect_rate": k / n if n else None,
        "defect_rate_ci95": _interval(k, n),
        "defect_level": level,
        "n_defects": k,
        "n_failed": col.n_failed,
    }


@aggregator("rate_per_level")
def rate_per_level(col: ScoreColumn) -> dict[str, Any]:
    """Share of the scored rows at each integer level (severities 0-7, ratings 1-5; a fractional
    score counts at its nearest level), with Wilson 95% intervals and counts, and the number of failed
    rows (excluded from the denominator). Every level of ``options["levels"]`` is listed, those no row
    reached with a rate of 0."""
    n = len(col.values)
    counts: dict[int, int] = {int(v): 0 for v in col.options.get("levels", ())}
    if n:
        levels, found = np.unique(np.rint(col.values).astype(int), return_counts=True)
        for level, count in zip(levels, found, strict=True):
            counts[int(level)] = int(count)
    ordered = sorted(counts)
    return {
        "rate_per_level": {str(k): counts[k] / n for k in ordered} if n else {},
        "rate_per_level_ci95": {str(k): _interval(counts[k], n) for k in ordered} if n else {},
        "count_per_level": {str(k): counts[k] for k in ordered},
        "n_failed": col.n_failed,
    }
