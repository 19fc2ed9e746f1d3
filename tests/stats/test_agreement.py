"""Agreement statistics against scikit-learn's cohen_kappa_score, statsmodels' fleiss_kappa, the
written-out pairwise definition of Krippendorff's alpha and the krippendorff package (random data
with missing values), and the judge-versus-people statistics against scipy."""

from __future__ import annotations

import itertools
import math

import krippendorff
import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss

from touchstone.stats.agreement import (
    Level,
    adjacent_agreement,
    cohen_kappa,
    exact_agreement,
    fleiss_kappa,
    fleiss_table,
    judge_vs_people,
    krippendorff_alpha,
)


@pytest.mark.parametrize("trial", range(40))
@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_sklearn(trial: int, weights: str | None) -> None:
    rng = np.random.default_rng(trial)
    n, k = int(rng.integers(2, 60)), int(rng.integers(2, 6))
    a = rng.integers(1, k + 1, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(1, k + 1, n))
    expected = cohen_kappa_score(a, b, weights=weights)
    got = cohen_kappa(a.tolist(), b.tolist(), weights=weights)  # type: ignore[arg-type]
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def test_cohen_kappa_edges() -> None:
    assert cohen_kappa([1, 2, 3], [1, 2, 3]) == pytest.approx(1.0)
    assert math.isnan(cohen_kappa([2, 2], [2, 2]))
    with pytest.raises(ValueError):
        cohen_kappa([1], [1, 2])


@pytest.mark.parametrize("trial", range(40))
def test_fleiss_equals_statsmodels(trial: int) -> None:
    rng = np.random.default_rng(100 + trial)
    subjects, raters, k = int(rng.integers(2, 40)), int(rng.integers(2, 7)), int(rng.integers(2, 5))
    truth = rng.integers(0, k, subjects)
    ratings = [
        [int(t) if rng.random() < 0.7 else int(rng.integers(0, k)) for _ in range(raters)] for t in truth
    ]
    table, _ = fleiss_table(ratings)
    expected = sm_fleiss(table)
    got = fleiss_kappa(table)
    if math.isnan(expected):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(expected, abs=1e-12)


def alpha_by_definition(data: np.ndarray, level: str) -> float:
    """α = 1 − D_o / D_e written out over pairs of values: D_o averages δ² over the ordered pairs of
    values within each unit (weighted 1/(m_u − 1)), D_e over all ordered pairs of pairable values."""
    units = [col[~np.isnan(col)] for col in data.T]
    units = [u for u in units if len(u) >= 2]
    pooled = np.concatenate(units)
    n = len(pooled)
    domain = sorted(set(pooled.tolist()))
    count = {v: float(np.sum(pooled == v)) for v in domain}

    def d2(c: float, k: float) -> float:
        if level == "nominal":
            return 0.0 if c == k else 1.0
        if level == "interval":
            return (c - k) ** 2
        lo, hi = min(c, k), max(c, k)
        return (sum(count[g] for g in domain if lo <= g <= hi) - (count[c] + count[k]) / 2) ** 2

    d_o = (
        sum(
            sum(d2(u[i], u[j]) for i, j in itertools.permutations(range(len(u)), 2)) / (len(u) - 1)
            for u in units
        )
        / n
    )
    d_e = sum(d2(pooled[i], pooled[j]) for i, j in itertools.permutations(range(n), 2)) / (n * (n - 1))
    return 1 - d_o / d_e


@pytest.mark.parametrize("trial", range(15))
@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_definition_and_package(trial: int, level: Level) -> None:
    rng = np.random.default_rng(200 + trial)
    raters, units = int(rng.integers(2, 5)), int(rng.integers(3, 15))
    truth = rng.integers(1, 6, units)
    data = np.where(rng.random((raters, units)) < 0.7, truth, rng.integers(1, 6, (raters, units))).astype(
        float
    )
    data[rng.random((raters, units)) < 0.25] = np.nan
    data[:, 0] = [1.0, 2.0] + [np.nan] * (raters - 2)  # at least two distinct pairable values
    got = krippendorff_alpha(data, level)
    assert got == pytest.approx(alpha_by_definition(data, level), abs=1e-10)
    assert got == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement=level), abs=1e-10
    )


def test_alpha_perfect_and_degenerate() -> None:
    data = np.array([[1, 2, 3, np.nan], [1, 2, 3, 4]])
    assert krippendorff_alpha(data, "interval") == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha(np.array([[1.0, 1.0], [1.0, np.nan]])))


def test_judge_vs_people_values_and_intervals() -> None:
    rng = np.random.default_rng(4)
    people = rng.integers(1, 6, 80).astype(float)
    judge = np.clip(people + rng.integers(-1, 2, 80), 1, 5)
    got = judge_vs_people(judge, people, bootstrap=300, seed=1)
    assert got["spearman"].value == pytest.approx(sps.spearmanr(judge, people).statistic)
    assert got["kendall"].value == pytest.approx(sps.kendalltau(judge, people).statistic)
    assert got["exact_agreement"].value == pytest.approx(np.mean(judge == people))
    assert got["adjacent_agreement"].value == pytest.approx(1.0)
    for est in got.values():
        assert est.lower is not None and est.upper is not None and est.value is not None
        assert est.lower <= est.value + 1e-9 and est.value <= est.upper + 1e-9
    assert judge_vs_people(judge, people, bootstrap=50, seed=3) == judge_vs_people(
        judge, people, bootstrap=50, seed=3
    )


def test_agreement_rounding() -> None:
    x, y = np.array([1.4, 2.6, 5.0]), np.array([1.0, 2.0, 3.0])
    assert exact_agreement(x, y) == pytest.approx(1 / 3)
    assert adjacent_agreement(x, y) == pytest.approx(2 / 3)
    flat = judge_vs_people([3.0, 3.0, 3.0], [1.0, 2.0, 3.0], bootstrap=10)
    assert flat["spearman"].value is None and flat["spearman"].lower is None
