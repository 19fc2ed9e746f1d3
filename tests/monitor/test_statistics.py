"""Welch's one-sided t-test against its written-out definition and scipy's ``ttest_ind``; threshold
sides; deterministic sampling (the same id always decided the same way, rates near the asked rate)."""

from __future__ import annotations

import hashlib
import math
import random

import pytest
from scipy import stats

from touchstone.monitor.alerts import regression_p_value, threshold_breached, welch_t
from touchstone.monitor.sampling import keep, sample_point


def definition(w: list[float], b: list[float], higher_is_better: bool) -> float:
    """Welch's test written out: t, Welch–Satterthwaite df, one-sided tail of Student's t."""
    nw, nb = len(w), len(b)
    mw, mb = sum(w) / nw, sum(b) / nb
    vw = sum((x - mw) ** 2 for x in w) / (nw - 1)
    vb = sum((x - mb) ** 2 for x in b) / (nb - 1)
    t = (mw - mb) / math.sqrt(vw / nw + vb / nb)
    df = (vw / nw + vb / nb) ** 2 / ((vw / nw) ** 2 / (nw - 1) + (vb / nb) ** 2 / (nb - 1))
    return float(stats.t.cdf(t, df) if higher_is_better else stats.t.sf(t, df))


@pytest.mark.filterwarnings("ignore:Precision loss:RuntimeWarning")
def test_welch_equals_definition_and_scipy_on_random_samples() -> None:
    rng = random.Random(15)
    for _ in range(300):
        w = [rng.gauss(rng.uniform(-1, 1), rng.uniform(0.1, 3)) for _ in range(rng.randint(2, 40))]
        b = [rng.gauss(rng.uniform(-1, 1), rng.uniform(0.1, 3)) for _ in range(rng.randint(2, 80))]
        if rng.random() < 0.3:  # scores on a 1-5 scale, with ties
            w = [float(rng.randint(1, 5)) for _ in w]
            b = [float(rng.randint(1, 5)) for _ in b]
        if len(set(w)) == 1 and len(set(b)) == 1:
            continue
        for higher in (True, False):
            p = regression_p_value(w, b, higher)
            assert p == pytest.approx(definition(w, b, higher), rel=1e-9, abs=1e-12)
            ref = stats.ttest_ind(w, b, equal_var=False, alternative="less" if higher else "greater")
            assert p == pytest.approx(float(ref.pvalue), rel=1e-7, abs=1e-12)
        t, df = welch_t(w, b)
        ref_t = stats.ttest_ind(w, b, equal_var=False)
        assert t == pytest.approx(float(ref_t.statistic), rel=1e-9)
        assert df == pytest.approx(float(ref_t.df), rel=1e-9)


def test_welch_edge_cases() -> None:
    # constant samples: certain when different, no evidence when equal
    assert regression_p_value([0.0, 0.0], [1.0, 1.0, 1.0], True) == 0.0
    assert regression_p_value([1.0, 1.0], [0.0, 0.0], True) == 1.0
    assert regression_p_value([3.0, 3.0], [3.0, 3.0], True) == 1.0
    assert regression_p_value([1.0, 1.0], [0.0, 0.0], False) == 0.0  # lower is better: a rise is worse
    # one side constant, the other not: the ordinary formula
    assert regression_p_value([0.0, 0.0, 0.0], [0.5, 1.0, 0.8], True) == pytest.approx(
        definition([0.0, 0.0, 0.0], [0.5, 1.0, 0.8], True)
    )
    with pytest.raises(ValueError, match="two values"):
        welch_t([1.0], [1.0, 2.0])


def test_null_and_planted_drop_error_rates() -> None:
    """At alpha 0.01 a null window alerts about 1% of the time; a drop of one standard deviation
    with 30 rows against 90 is found nearly always."""
    rng = random.Random(7)
    trials = 2000
    false = sum(
        regression_p_value([rng.gauss(0, 1) for _ in range(30)], [rng.gauss(0, 1) for _ in range(90)], True)
        < 0.01
        for _ in range(trials)
    )
    assert 0.002 < false / trials < 0.02
    found = sum(
        regression_p_value([rng.gauss(-1, 1) for _ in range(30)], [rng.gauss(0, 1) for _ in range(90)], True)
        < 0.01
        for _ in range(200)
    )
    assert found / 200 > 0.95


def test_threshold_sides() -> None:
    assert threshold_breached(0.4, 0.5, True) and not threshold_breached(0.5, 0.5, True)
    assert threshold_breached(4.5, 4.0, False) and not threshold_breached(4.0, 4.0, False)


def test_sampling_is_deterministic_and_near_the_rate() -> None:
    ids = [f"req-{i}" for i in range(20_000)]
    for rate in (0.05, 0.3, 0.5, 0.9):
        kept = [i for i in ids if keep(i, rate)]
        assert kept == [i for i in ids if keep(i, rate)]  # the same decisions every time
        sd = math.sqrt(rate * (1 - rate) / len(ids))
        assert abs(len(kept) / len(ids) - rate) < 4 * sd
    # nested: what a lower rate keeps, a higher rate keeps too (one point per id)
    assert {i for i in ids if keep(i, 0.1)} <= {i for i in ids if keep(i, 0.2)}
    assert all(keep(i, 1.0) for i in ids[:100]) and not any(keep(i, 0.0) for i in ids[:100])
    # fixed values: the hash has no seed and no per-process salt
    assert sample_point("trace-abc") == sample_point("trace-abc")
    digest = hashlib.blake2b(b"req-0", digest_size=8).digest()
    assert sample_point("req-0") == int.from_bytes(digest, "big") / 2**64
