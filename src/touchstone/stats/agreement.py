"""Agreement between raters, and between a judge and people.

- Cohen's kappa for two raters, unweighted or weighted by the distance between category positions
  (linear ``|i − j|`` or quadratic ``(i − j)²``): ``κ = 1 − Σ w·O / Σ w·E`` with ``O`` the observed
  confusion matrix and ``E`` the product of its margins over ``n``.
- Fleiss' kappa for a table of subjects × categories (each subject rated by the same number of raters):
  ``κ = (P̄ − P̄_e) / (1 − P̄_e)``.
- Krippendorff's alpha on reliability data (raters × units, NaN where a rater gave no value):
  ``α = 1 − D_o / D_e`` from the coincidence matrix, with the nominal, ordinal or interval distance.
- A judge against people on the same rows: Spearman's and Kendall's (tau-b) rank correlations, exact
  and adjacent agreement (after rounding to whole points), with percentile bootstrap intervals over rows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval"]


# ------------------------------------------------------------------------------ Cohen's kappa
def cohen_kappa(a: Sequence[Any], b: Sequence[Any], weights: Weights = None) -> float:
    """Cohen's kappa of two raters' labels on the same items (categories: the sorted union)."""
    if len(a) != len(b) or not a:
        raise ValueError("cohen_kappa: expected two non-empty label lists of the same length")
    labels = sorted(set(a) | set(b))
    pos = {x: i for i, x in enumerate(labels)}
    k = len(labels)
    observed = np.zeros((k, k))
    for x, y in zip(a, b, strict=True):
        observed[pos[x], pos[y]] += 1
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0)) / observed.sum()
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j).astype(float)
    elif weights == "quadratic":
        w = ((i - j) ** 2).astype(float)
    else:
        raise ValueError(f"cohen_kappa: weights must be None, 'linear' or 'quadratic', got {weights!r}")
    denominator = float(np.sum(w * expected))
    if denominator == 0:
        return math.nan
    return 1.0 - float(np.sum(w * observed)) / denominator


# ------------------------------------------------------------------------------ Fleiss' kappa
def fleiss_table(ratings: Sequence[Sequence[Any]]) -> tuple[NDArray[np.float64], list[Any]]:
    """Subjects × categories counts from each subject's list of ratings; and the categories."""
    categories = sorted({x for row in ratings for x in row})
    pos = {x: i for i, x in enumerate(categories)}
    table = np.zeros((len(ratings), len(categories)))
    for s, row in enumerate(ratings):
        for x in row:
            table[s, pos[x]] += 1
    return table, categories


def fleiss_kappa(table: ArrayLike) -> float:
    """Fleiss' kappa of a subjects × categories count table (the same number of raters per subject)."""
    t = np.asarray(table, dtype=float)
    per_subject = t.sum(axis=1)
    if t.ndim != 2 or t.shape[0] == 0 or not np.allclose(per_subject, per_subject[0]):
        raise ValueError("fleiss_kappa: expected a subjects x categories table with equal raters per subject")
    n = per_subject[0]
    if n < 2:
        raise ValueError("fleiss_kappa: at least two ratings per subject are needed")
    p_j = t.sum(axis=0) / t.sum()
    p_i = (np.sum(t * t, axis=1) - n) / (n * (n - 1))
    p_bar, p_e = float(np.mean(p_i)), float(np.sum(p_j**2))
    return math.nan if p_e == 1 else (p_bar - p_e) / (1 - p_e)


# ------------------------------------------------------------------------------ Krippendorff's alpha
def coincidences(data: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The coincidence matrix of reliability data (raters × units, NaN missing) and its values.

    Each unit with ``m ≥ 2`` values adds ``1 / (m − 1)`` for every ordered pair of its values;
    units with fewer values are not pairable and add nothing."""
    d = np.asarray(data, dtype=float)
    values = np.unique(d[~np.isnan(d)])
    pos = {v: i for i, v in enumerate(values.tolist())}
    o = np.zeros((len(values), len(values)))
    for unit in d.T:
        present = unit[~np.isnan(unit)]
        m = len(present)
        if m < 2:
            continue
        counts = np.zeros(len(values))
        for v in present.tolist():
            counts[pos[v]] += 1
        o += (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return o, values


def distance(level: Level, values: NDArray[np.float64], n_c: NDArray[np.float64]) -> NDArray[np.float64]:
    """The squared difference ``δ²(c, k)`` between the values, for the level of measurement."""
    k = len(values)
    if level == "nominal":
        return 1.0 - np.eye(k)
    if level == "interval":
        return np.asarray((values[:, None] - values[None, :]) ** 2, dtype=np.float64)
    if level == "ordinal":
        cum = np.concatenate([[0.0], np.cumsum(n_c)])
        i, j = np.indices((k, k))
        lo, hi = np.minimum(i, j), np.maximum(i, j)
        between = cum[hi + 1] - cum[lo]  # Σ n_g for g from the lower to the higher value, both included
        return np.asarray((between - (n_c[i] + n_c[j]) / 2) ** 2, dtype=np.float64)
    raise ValueError(f"krippendorff_alpha: level must be nominal, ordinal or interval, got {level!r}")


def krippendorff_alpha(data: ArrayLike, level: Level = "nominal") -> float:
    """Krippendorff's alpha of reliability data: rows are raters, columns units, NaN a missing value."""
    o, values = coincidences(data)
    n_c = o.sum(axis=1)
    n = float(n_c.sum())
    if n <= 1 or len(values) < 2:
        return math.nan
    delta = distance(level, values, n_c)
    d_o = float(np.sum(o * delta)) / n
    d_e = float(np.sum(np.outer(n_c, n_c) * delta)) / (n * (n - 1))
    return math.nan if d_e == 0 else 1.0 - d_o / d_e


# ------------------------------------------------------------------------------ judge vs people
@dataclass(frozen=True)
class Estimate:
    """A statistic with its percentile bootstrap interval (None where it cannot be computed)."""

    value: float | None
    lower: float | None
    upper: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {"value": self.value, "ci_lower": self.lower, "ci_upper": self.upper}


def _finite(x: float) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def spearman(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    from scipy.stats import spearmanr

    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    return float(spearmanr(x, y).statistic)


def kendall(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    from scipy.stats import kendalltau

    if len(x) < 2 or np.all(x == x[0]) or np.all(y == y[0]):
        return math.nan
    return float(kendalltau(x, y).statistic)


def exact_agreement(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """The share of rows where both round to the same whole point."""
    return float(np.mean(np.rint(x) == np.rint(y))) if len(x) else math.nan


def adjacent_agreement(x: NDArray[np.float64], y: NDArray[np.float64]) -> float:
    """The share of rows where the rounded values differ by at most one point."""
    return float(np.mean(np.abs(np.rint(x) - np.rint(y)) <= 1)) if len(x) else math.nan


JUDGE_STATISTICS: dict[str, Callable[[NDArray[np.float64], NDArray[np.float64]], float]] = {
    "spearman": spearman,
    "kendall": kendall,
    "exact_agreement": exact_agreement,
    "adjacent_agreement": adjacent_agreement,
}


def judge_vs_people(
    judge: ArrayLike,
    people: ArrayLike,
    *,
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
) -> dict[str, Estimate]:
    """Each statistic of :data:`JUDGE_STATISTICS` between the judge's values and the people's (one
    consensus value per row), with a percentile bootstrap interval over rows (resampled with
    replacement, seeded). A statistic undefined on a resample (no variation) is left out of that
    resample's distribution."""
    x, y = np.asarray(judge, dtype=float), np.asarray(people, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("judge_vs_people: expected two value lists of the same length")
    rng = np.random.default_rng(seed)
    picks = [rng.integers(0, len(x), len(x)) for _ in range(bootstrap)] if len(x) else []
    alpha = (1 - confidence) / 2
    result = {}
    for name, stat in JUDGE_STATISTICS.items():
        value = _finite(stat(x, y))
        draws = np.array([stat(x[p], y[p]) for p in picks])
        draws = draws[np.isfinite(draws)] if len(draws) else draws
        if value is None or len(draws) == 0:
            result[name] = Estimate(value, None, None)
        else:
            result[name] = Estimate(
                value, float(np.quantile(draws, alpha)), float(np.quantile(draws, 1 - alpha))
            )
    return result
