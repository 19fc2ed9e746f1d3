"""Paired statistics for comparing two runs on the same rows.

Every function takes the per-row differences (or the pass/fail pairs) of two runs and returns plain
numbers, so a comparison is recomputable from stored scores without model calls:

- :func:`paired_bootstrap_ci`: percentile bootstrap interval of the mean difference (pairs resampled
  together, i.e. the differences resampled);
- :func:`sign_flip_test`: the paired permutation test of the mean difference (under the null each
  difference is as likely to have either sign); exact enumeration for few pairs, Monte Carlo for
  more, the normal law of the permutation distribution for many;
- :func:`wilcoxon_signed_rank`: Wilcoxon's signed-rank test (zeros dropped, average ranks for ties),
  exact for up to 50 non-zero differences, normal approximation with the tie correction beyond;
- :func:`mcnemar`: McNemar's test for paired pass/fail outcomes (exact binomial or chi-square);
- :func:`holm`: Holm's step-down adjustment of a family of p-values.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from touchstone.stats.aggregators import bootstrap_ci

__all__ = [
    "EXACT_MAX_PAIRS",
    "MONTE_CARLO_MAX_PAIRS",
    "WILCOXON_EXACT_MAX",
    "McNemarResult",
    "SignificanceResult",
    "holm",
    "mcnemar",
    "paired_bootstrap_ci",
    "sign_flip_test",
    "wilcoxon_signed_rank",
]

EXACT_MAX_PAIRS = 16
"""Up to this many non-zero differences the permutation test enumerates every sign assignment."""
MONTE_CARLO_MAX_PAIRS = 2000
"""Up to this many non-zero differences it draws random sign assignments; beyond, the permutation
distribution is summarised by its normal law (its exact mean 0 and variance ``sum d_i^2``)."""
WILCOXON_EXACT_MAX = 50
"""Up to this many non-zero differences the signed-rank p-value is exact (as scipy's ``auto``)."""

# scipy.stats is imported where it is used (ranks, the binomial law): importing it costs seconds,
# and `import touchstone` loads this module.

# Two statistics closer than this (relative) count as equal: sums of floats in another order differ
# in the last bits, and an observed statistic must count as "at least as extreme" as itself.
_REL_TOL = 1e-9


@dataclass(frozen=True)
class SignificanceResult:
    """A test's statistic, two-sided p-value, and the name of the method that gave it."""

    statistic: float
    p_value: float
    method: str


@dataclass(frozen=True)
class McNemarResult:
    """McNemar's test on ``b`` (A pass, B fail) and ``c`` (A fail, B pass) discordant pairs."""

    b: int
    c: int
    statistic: float
    p_value: float
    method: str


def _normal_sf_two_sided(z: float) -> float:
    """``2 (1 - Phi(|z|))``, by the complementary error function (no scipy import)."""
    return math.erfc(abs(z) / math.sqrt(2))


def _as_array(values: Sequence[float] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ValueError(f"expected a one-dimensional array of differences, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("differences must be finite numbers (drop failed pairs first)")
    return arr


def paired_bootstrap_ci(
    differences: Sequence[float] | np.ndarray, *, n_boot: int = 2000, seed: int = 0, level: float = 0.95
) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of paired differences ``b_i - a_i``.

    The pairs are resampled together (``n`` pairs drawn with replacement), which is the same as
    resampling the differences; the interval is the ``(1-level)/2`` and ``(1+level)/2`` quantiles of
    the resampled means (:func:`touchstone.stats.aggregators.bootstrap_ci`). One pair, or differences
    all equal: the point itself. No pairs: ``(nan, nan)``."""
    return bootstrap_ci(_as_array(differences), resamples=n_boot, seed=seed, level=level)


def _tail_p(null: np.ndarray, observed: float) -> float:
    """Two-sided p-value of ``|observed|`` against a symmetric null sample: share at least as extreme."""
    tol = _REL_TOL * max(1.0, abs(observed))
    return float(np.mean(np.abs(null) >= abs(observed) - tol))


def sign_flip_test(
    differences: Sequence[float] | np.ndarray,
    *,
    n_resamples: int = 9999,
    seed: int = 0,
    exact_max: int = EXACT_MAX_PAIRS,
    monte_carlo_max: int = MONTE_CARLO_MAX_PAIRS,
) -> SignificanceResult:
    """Paired permutation (sign-flip) test of the mean difference; the statistic is the mean.

    Under the null hypothesis each difference ``d_i`` is as likely to be ``-d_i``; the p-value is the
    share of sign assignments whose mean is at least as far from 0 as the observed one. Zero
    differences do not change under a flip, so only the ``m`` non-zero ones are flipped:

    - ``m <= exact_max``: all ``2^m`` assignments (exact; equals scipy's ``permutation_test`` with
      ``permutation_type="samples"`` and ``n_resamples=inf``);
    - ``m <= monte_carlo_max``: ``n_resamples`` random assignments, ``p = (1 + hits) / (1 + n_resamples)``
      (never 0, valid at any number of resamples);
    - beyond: the permutation distribution of ``sum s_i d_i`` has mean 0 and variance ``sum d_i^2``
      exactly; ``p = 2 (1 - Phi(|sum d_i| / sqrt(sum d_i^2)))``.

    No non-zero difference: p = 1 (nothing speaks against the null)."""
    d = _as_array(differences)
    n = len(d)
    if n == 0:
        return SignificanceResult(math.nan, math.nan, "permutation (no pairs)")
    observed = float(d.mean())
    nz = d[d != 0]
    m = len(nz)
    if m == 0:
        return SignificanceResult(observed, 1.0, "permutation (exact)")
    total = float(nz.sum())
    if m <= exact_max:
        # every sign vector as the bits of 0 .. 2^m - 1
        bits = (np.arange(2**m)[:, None] >> np.arange(m)[None, :]) & 1
        sums = (1 - 2 * bits) @ nz
        return SignificanceResult(observed, _tail_p(sums, total), "permutation (exact)")
    if m <= monte_carlo_max:
        rng = np.random.default_rng(seed)
        hits = 0
        tol = _REL_TOL * max(1.0, abs(total))
        chunk = max(1, min(n_resamples, 2_000_000 // m))
        for start in range(0, n_resamples, chunk):
            size = min(chunk, n_resamples - start)
            signs = 1 - 2 * rng.integers(0, 2, size=(size, m), dtype=np.int8)
            hits += int(np.count_nonzero(np.abs(signs @ nz) >= abs(total) - tol))
        p = (1 + hits) / (1 + n_resamples)
        return SignificanceResult(observed, p, f"permutation (Monte Carlo, {n_resamples} resamples)")
    z = total / math.sqrt(float(nz @ nz))
    return SignificanceResult(observed, _normal_sf_two_sided(z), "permutation (normal approximation)")


def _subset_sum_distribution(weights: np.ndarray) -> np.ndarray:
    """``counts[s]``: how many of the ``2^m`` subsets of the integer ``weights`` sum to ``s``."""
    counts = np.zeros(int(weights.sum()) + 1)
    counts[0] = 1.0
    for w in weights.astype(int):
        if w:
            counts[w:] = counts[w:] + counts[:-w].copy()
        else:
            counts *= 2
    return counts


def wilcoxon_signed_rank(
    differences: Sequence[float] | np.ndarray, *, exact_max: int = WILCOXON_EXACT_MAX
) -> SignificanceResult:
    """Wilcoxon's signed-rank test, two-sided; the statistic is ``W+`` (sum of the ranks of the
    positive differences).

    Zero differences are dropped (Wilcoxon's own treatment, scipy's ``zero_method="wilcox"``); the
    ``m`` others are ranked by absolute value, ties getting their average rank. With ``m <=
    exact_max`` the p-value is exact: the distribution of ``W+`` over the ``2^m`` equally likely sign
    assignments, counted by subset sums (half ranks doubled to integers), and ``p = min(1, 2
    min(P(W+ >= w), P(W+ <= w)))`` (scipy's ``method="exact"`` without ties, its exact permutation
    test with them). Beyond, the normal approximation with the tie correction: ``z = (W+ - m(m+1)/4)
    / sqrt(m(m+1)(2m+1)/24 - sum(t^3 - t)/48)``, without continuity correction (scipy's
    ``method="asymptotic"``). No non-zero difference: p = 1 (scipy gives NaN there)."""
    d = _as_array(differences)
    nz = d[d != 0]
    m = len(nz)
    if m == 0:
        p_none = math.nan if len(d) == 0 else 1.0
        return SignificanceResult(0.0, p_none, "Wilcoxon signed-rank (no non-zero pairs)")
    from scipy.stats import rankdata

    ranks = rankdata(np.abs(nz), method="average")
    w_plus = float(ranks[nz > 0].sum())
    if m <= exact_max:
        doubled = np.rint(2 * ranks).astype(int)
        counts = _subset_sum_distribution(doubled)
        total = counts.sum()
        w2 = round(2 * w_plus)
        upper = counts[w2:].sum() / total
        lower = counts[: w2 + 1].sum() / total
        p = min(1.0, 2 * min(upper, lower))
        return SignificanceResult(w_plus, float(p), "Wilcoxon signed-rank (exact)")
    _, tie_counts = np.unique(np.abs(nz), return_counts=True)
    mean = m * (m + 1) / 4
    var = m * (m + 1) * (2 * m + 1) / 24 - float(np.sum(tie_counts**3 - tie_counts)) / 48
    z = (w_plus - mean) / math.sqrt(var)
    p = _normal_sf_two_sided(z)
    return SignificanceResult(w_plus, p, "Wilcoxon signed-rank (normal approximation)")


def mcnemar(b: int, c: int, *, exact: bool = True, correction: bool = True) -> McNemarResult:
    """McNemar's test of paired pass/fail outcomes from the discordant counts: ``b`` pairs that
    passed in A and failed in B, ``c`` the reverse (concordant pairs carry no information).

    Exact: under the null each discordant pair goes either way with probability 1/2, so ``min(b, c)``
    is Binomial(b + c, 1/2) and ``p = min(1, 2 P(X <= min(b, c)))``; the statistic is ``min(b, c)``.
    Otherwise ``(|b - c| - 1)^2 / (b + c)`` (without the 1 when ``correction`` is False) against the
    chi-square law with one degree of freedom. Both as statsmodels' ``mcnemar``; no discordant pair:
    p = 1 (statsmodels' chi-square gives NaN there)."""
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be non-negative, got b={b}, c={c}")
    n = b + c
    if exact:
        k = min(b, c)
        from scipy.stats import binom

        p = 1.0 if n == 0 else min(1.0, 2 * float(binom.cdf(k, n, 0.5)))
        return McNemarResult(b, c, float(k), p, "McNemar (exact binomial)")
    if n == 0:
        return McNemarResult(b, c, 0.0, 1.0, "McNemar (chi-square)")
    diff = abs(b - c) - (1 if correction else 0)
    stat = diff * diff / n
    name = "McNemar (chi-square, continuity-corrected)" if correction else "McNemar (chi-square)"
    # chi-square with one degree of freedom: P(X > s) = P(|Z| > sqrt(s))
    return McNemarResult(b, c, float(stat), _normal_sf_two_sided(math.sqrt(stat)), name)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given (statsmodels' ``multipletests(...,
    method="holm")``): with the ``k`` finite p-values sorted ascending, ``p~_(i) = max_{j <= i}
    min(1, (k - j + 1) p_(j))``. NaN (a metric that could not be tested) stays NaN and is not
    counted in the family."""
    arr = np.asarray(p_values, dtype=float)
    out = np.full(len(arr), math.nan)
    finite = np.flatnonzero(~np.isnan(arr))
    k = len(finite)
    if k == 0:
        return [float(x) for x in out]
    order = finite[np.argsort(arr[finite], kind="stable")]
    scaled = np.minimum(1.0, (k - np.arange(k)) * arr[order])
    out[order] = np.maximum.accumulate(scaled)
    return [float(x) for x in out]
