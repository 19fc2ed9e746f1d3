"""Paired statistics against their written-out definitions and the reference libraries: Wilcoxon's
signed-rank test (scipy.stats.wilcoxon), the sign-flip permutation test (by enumeration and
scipy.stats.permutation_test), McNemar's test (statsmodels), Holm's adjustment (statsmodels'
multipletests) and the paired bootstrap interval (scipy.stats.bootstrap), on many seeded random
samples with ties, zeros, one pair and all-equal pairs; then the error rates over seeded trials."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.multitest import multipletests

from touchstone.stats.paired import (
    holm,
    mcnemar,
    paired_bootstrap_ci,
    sign_flip_test,
    wilcoxon_signed_rank,
)


def samples(seed: int, count: int, max_n: int = 40) -> list[np.ndarray]:
    """Paired differences of many shapes: continuous, small integers (ties and zeros), half-steps,
    one pair, all equal, all zero."""
    rng = np.random.default_rng(seed)
    out: list[np.ndarray] = [np.array([0.5]), np.array([-2.0]), np.zeros(7), np.full(9, 0.25),
                             np.array([1.0, -1.0]), np.array([0.0, 0.0, 3.0])]
    for i in range(count):
        n = int(rng.integers(1, max_n + 1))
        kind = i % 4
        if kind == 0:
            d = rng.normal(0.3, 1.0, n)
        elif kind == 1:
            d = rng.integers(-3, 4, n).astype(float)  # many ties and zeros
        elif kind == 2:
            d = rng.choice([-1.0, 0.0, 1.0], n, p=[0.3, 0.3, 0.4])  # pass/fail flips
        else:
            d = np.round(rng.normal(0, 2, n) * 2) / 2  # half steps: half ranks
        out.append(d)
    return out


# ----------------------------------------------------------------------------------- definitions
def wilcoxon_by_enumeration(d: np.ndarray) -> float:
    """Two-sided p of W+ over all 2^m sign assignments of the non-zero |d| (average ranks)."""
    nz = d[d != 0]
    ranks = sps.rankdata(np.abs(nz))
    w = ranks[nz > 0].sum()
    null = np.array([sum(r for r, s in zip(ranks, signs, strict=True) if s)
                     for signs in itertools.product([0, 1], repeat=len(nz))])
    upper = np.mean(null >= w - 1e-9)
    lower = np.mean(null <= w + 1e-9)
    return float(min(1.0, 2 * min(upper, lower)))


def sign_flip_by_enumeration(d: np.ndarray) -> float:
    """Share of all 2^n sign assignments whose |mean| is at least the observed |mean|."""
    obs = abs(d.mean())
    means = [abs(np.mean(d * np.array(signs))) for signs in itertools.product([-1, 1], repeat=len(d))]
    return float(np.mean(np.array(means) >= obs - 1e-9 * max(1.0, obs)))


# ----------------------------------------------------------------------------------------- Wilcoxon
def test_wilcoxon_equals_enumeration_on_small_samples() -> None:
    for d in samples(1, 150, max_n=12):
        nz = d[d != 0]
        res = wilcoxon_signed_rank(d)
        if len(nz) == 0:
            assert res.p_value == 1.0 and res.statistic == 0.0
            continue
        assert res.statistic == pytest.approx(sps.rankdata(np.abs(nz))[nz > 0].sum())
        assert res.p_value == pytest.approx(wilcoxon_by_enumeration(d), abs=1e-12), d


def test_wilcoxon_equals_scipy() -> None:
    checked = 0
    for d in samples(2, 160, max_n=90):
        nz = d[d != 0]
        if len(nz) == 0:
            continue
        ties = len(np.unique(np.abs(nz))) < len(nz)
        res = wilcoxon_signed_rank(d)
        if len(nz) > 50:  # both: normal approximation with the tie correction, zeros dropped
            ref = sps.wilcoxon(d, zero_method="wilcox", method="asymptotic").pvalue
            assert res.method.endswith("(normal approximation)")
        elif not ties:
            ref = sps.wilcoxon(nz, method="exact").pvalue
        elif len(nz) <= 13:  # scipy's own exact permutation distribution with ties
            ref = sps.wilcoxon(nz, method=sps.PermutationMethod(n_resamples=np.inf)).pvalue
        else:
            continue  # ties, 14-50 pairs: ours is exact, scipy's asymptotic (checked by enumeration above)
        assert res.p_value == pytest.approx(ref, rel=1e-9, abs=1e-12), d
        checked += 1
    assert checked > 80


def test_wilcoxon_edge_cases() -> None:
    assert math.isnan(wilcoxon_signed_rank([]).p_value)
    assert wilcoxon_signed_rank([0.0, 0.0]).p_value == 1.0  # scipy: NaN
    assert wilcoxon_signed_rank([3.0]).p_value == 1.0  # one pair: both signs equally likely
    assert wilcoxon_signed_rank([2.0] * 6).p_value == pytest.approx(2 / 64)


# ----------------------------------------------------------------------------- sign-flip permutation
def test_sign_flip_exact_equals_enumeration_and_scipy() -> None:
    for d in samples(3, 120, max_n=12):
        res = sign_flip_test(d)
        assert res.statistic == pytest.approx(d.mean())
        if not np.any(d):
            assert res.p_value == 1.0
            continue
        assert res.method == "permutation (exact)"
        assert res.p_value == pytest.approx(sign_flip_by_enumeration(d), abs=1e-12), d
        if len(d) >= 2:
            ref = sps.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf).pvalue
            assert res.p_value == pytest.approx(ref, abs=1e-12), d


def test_sign_flip_monte_carlo_and_normal_approximation_track_the_exact_p() -> None:
    rng = np.random.default_rng(4)
    for _ in range(10):
        d = rng.normal(0.4, 1.0, 16)
        exact = sign_flip_test(d).p_value
        mc = sign_flip_test(d, exact_max=10, n_resamples=20000, seed=1)
        assert mc.method.startswith("permutation (Monte Carlo")
        # the Monte Carlo p has standard error sqrt(p(1-p)/20000) <= 0.0036
        assert mc.p_value == pytest.approx(exact, abs=0.015)
    for _ in range(5):
        d = rng.normal(0.05, 1.0, 3000)
        approx = sign_flip_test(d)
        assert approx.method == "permutation (normal approximation)"
        mc = sign_flip_test(d, monte_carlo_max=10_000, n_resamples=4000, seed=2)
        assert approx.p_value == pytest.approx(mc.p_value, abs=0.03)


def test_sign_flip_is_seeded_and_ignores_zeros() -> None:
    d = np.random.default_rng(5).normal(0.2, 1.0, 100)
    assert sign_flip_test(d, seed=7) == sign_flip_test(d, seed=7)
    with_zeros = np.concatenate([d[:15], np.zeros(30)])
    assert sign_flip_test(with_zeros).p_value == pytest.approx(sign_flip_test(d[:15]).p_value)
    assert sign_flip_test(with_zeros).method == "permutation (exact)"
    assert math.isnan(sign_flip_test([]).p_value)
    with pytest.raises(ValueError, match="finite"):
        sign_flip_test([1.0, math.nan])


# ------------------------------------------------------------------------------------------ McNemar
def test_mcnemar_equals_statsmodels() -> None:
    for b, c in itertools.product(range(0, 30), range(0, 30)):
        table = [[11, b], [c, 4]]
        ours = mcnemar(b, c)
        ref = sm_mcnemar(table, exact=True)
        assert ours.p_value == pytest.approx(ref.pvalue, abs=1e-12)
        assert ours.statistic == ref.statistic
        # the definition: two-sided binomial tail of the smaller count
        if b + c:
            assert ours.p_value == pytest.approx(min(1.0, 2 * sps.binom.cdf(min(b, c), b + c, 0.5)))
            for correction in (True, False):
                chi = mcnemar(b, c, exact=False, correction=correction)
                ref_chi = sm_mcnemar(table, exact=False, correction=correction)
                assert chi.statistic == pytest.approx(ref_chi.statistic)
                assert chi.p_value == pytest.approx(ref_chi.pvalue, abs=1e-12)
    assert mcnemar(0, 0).p_value == 1.0
    assert mcnemar(0, 0, exact=False).p_value == 1.0  # statsmodels: NaN
    with pytest.raises(ValueError):
        mcnemar(-1, 2)


# --------------------------------------------------------------------------------------------- Holm
def test_holm_equals_statsmodels() -> None:
    rng = np.random.default_rng(6)
    for k in [1, 2, 3, 5, 10, 25]:
        for _ in range(6):  # statsmodels takes ~30 ms a call
            p = rng.random(k) ** 3
            if k > 2:
                p[1] = p[0]  # a tie
            assert holm(list(p)) == pytest.approx(multipletests(p, method="holm")[1].tolist(), abs=1e-12)


def test_holm_skips_nan_and_keeps_the_order() -> None:
    p = [0.01, math.nan, 0.04, 0.03]
    adjusted = holm(p)
    assert math.isnan(adjusted[1])
    ref = multipletests([0.01, 0.04, 0.03], method="holm")[1]
    assert [adjusted[0], adjusted[2], adjusted[3]] == pytest.approx(ref.tolist())
    assert holm([]) == []
    assert all(math.isnan(x) for x in holm([math.nan, math.nan]))


# ---------------------------------------------------------------------------------------- bootstrap
def test_bootstrap_ci_agrees_with_scipy_percentile() -> None:
    rng = np.random.default_rng(8)
    for i in range(12):
        n = int(rng.integers(20, 80))
        d = rng.normal(0.2, 1.0, n) if i % 2 else rng.integers(-2, 3, n).astype(float)
        lo, hi = paired_bootstrap_ci(d, n_boot=20000, seed=i)
        ref = sps.bootstrap((d,), np.mean, n_resamples=20000, method="percentile",
                            confidence_level=0.95, rng=np.random.default_rng(100 + i)).confidence_interval
        # two Monte Carlo estimates of the same 2.5% quantile, each with a standard error of about
        # 0.02 standard errors of the mean at 20000 resamples: 0.1 is about four standard errors of
        # their difference; integer differences have means on a grid of 1/n, so a quantile may
        # also land one step away
        tol = 0.1 * d.std() / math.sqrt(n) + (0 if i % 2 else 1 / n) + 1e-9
        assert lo == pytest.approx(ref.low, abs=tol)
        assert hi == pytest.approx(ref.high, abs=tol)
        assert lo <= d.mean() <= hi


def test_bootstrap_ci_definition_and_edges() -> None:
    d = np.random.default_rng(9).normal(0, 1, 50)
    # the definition: quantiles of the means of n pairs drawn with replacement
    rng = np.random.default_rng(10)
    means = d[rng.integers(0, 50, size=(40000, 50))].mean(axis=1)
    lo, hi = paired_bootstrap_ci(d, n_boot=40000, seed=3, level=0.9)
    assert lo == pytest.approx(np.quantile(means, 0.05), abs=0.01)
    assert hi == pytest.approx(np.quantile(means, 0.95), abs=0.01)
    assert paired_bootstrap_ci([0.7]) == (0.7, 0.7)
    assert paired_bootstrap_ci([0.0] * 10) == (0.0, 0.0)
    assert all(math.isnan(x) for x in paired_bootstrap_ci([]))
    assert paired_bootstrap_ci(d, seed=4) == paired_bootstrap_ci(d, seed=4)


# ----------------------------------------------------------------------------- error rates in trials
def test_null_rejected_at_about_alpha_and_planted_shift_found() -> None:
    """400 seeded null trials (scores with no difference but noise) reject at 0.05 within [0.02,
    0.09] (about three standard errors, sqrt(0.05 * 0.95 / 400) = 0.011); a planted shift of 0.7
    standard deviations over 40 pairs (power about 0.99: non-centrality 0.7 sqrt(40) = 4.4) is found
    in at least 95% of 200 trials."""
    rng = np.random.default_rng(11)
    null_hits = sum(sign_flip_test(rng.normal(0, 1, 40), seed=t).p_value < 0.05 for t in range(400))
    assert 0.02 <= null_hits / 400 <= 0.09
    planted = sum(sign_flip_test(rng.normal(0.7, 1, 40), seed=t).p_value < 0.05 for t in range(200))
    assert planted / 200 >= 0.95
    wil_null = sum(wilcoxon_signed_rank(rng.normal(0, 1, 40)).p_value < 0.05 for _ in range(400))
    assert 0.02 <= wil_null / 400 <= 0.09
    flips = [mcnemar(int(b), int(c)).p_value < 0.05 for b, c in rng.binomial(20, 0.5, size=(400, 2))]
    assert sum(flips) / 400 <= 0.09  # exact McNemar is conservative: at most about alpha
