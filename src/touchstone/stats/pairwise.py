"""Rankings from pairwise battles: Bradley–Terry maximum likelihood and online Elo, with bootstrap
intervals, reported on the Elo-like scale Chatbot Arena uses.

A battle is ``(system_a, system_b, score_a)`` with ``score_a`` 1 (A won), 0 (B won) or 0.5 (a tie:
half a win each way). Bradley–Terry models ``P(i beats j) = p_i / (p_i + p_j)``; with ``θ = ln p``
the log-likelihood is ``Σ_ij W_ij · ln σ(θ_i − θ_j)`` where ``W_ij`` counts i's wins over j (ties as
halves). It is maximised by Newton's method; a tiny ridge ``reg · Σ θ²`` keeps the estimate finite
when some system never lost (or never won) and fixes the common offset (the gradient of the
likelihood sums to zero, so at the optimum ``Σ θ = 0``: the geometric mean strength is 1).

Ratings are ``400 · log10(p) + 1000``; with an anchor, every rating is shifted so that the anchor
system has the given rating. Intervals are percentile bootstrap intervals: battles resampled with
replacement (seeded), the model refitted on each resample.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

SCALE = 400.0
"""Rating points per factor of 10 in strength."""
BASE_RATING = 1000.0
"""The rating of a system of geometric-mean strength (no anchor)."""
DEFAULT_REG = 1e-6
"""The ridge of the Bradley–Terry fit: negligible against one battle, enough to keep estimates finite."""

Battle = tuple[str, str, float]
"""``(system_a, system_b, score_a)``: 1 when A won, 0 when B won, 0.5 for a tie."""


@dataclass(frozen=True)
class SystemRating:
    """One system's place: rating with its interval (None without a bootstrap), battles and record."""

    system: str
    rating: float
    lower: float | None
    upper: float | None
    battles: int
    wins: int
    ties: int
    losses: int

    @property
    def win_rate(self) -> float:
        """Wins plus half the ties, over battles (ties count half a win)."""
        return (self.wins + 0.5 * self.ties) / self.battles if self.battles else math.nan

    def as_dict(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "rating": self.rating,
            "ci_lower": self.lower,
            "ci_upper": self.upper,
            "battles": self.battles,
            "wins": self.wins,
            "ties": self.ties,
            "losses": self.losses,
            "win_rate": self.win_rate,
        }


@dataclass(frozen=True)
class Ranking:
    """Systems by rating, highest first, and how the ratings were made."""

    method: str
    systems: list[SystemRating]
    n_battles: int
    confidence: float
    options: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "n_battles": self.n_battles,
            "confidence": self.confidence,
            "options": self.options,
            "systems": [dict(rank=i + 1, **s.as_dict()) for i, s in enumerate(self.systems)],
        }


# ------------------------------------------------------------------------------ Bradley–Terry
def win_matrix(
    a: NDArray[np.intp], b: NDArray[np.intp], score_a: NDArray[np.float64], n: int
) -> NDArray[np.float64]:
    """``W[i, j]``: i's wins over j, ties counted as half a win for each side."""
    w = np.bincount(a * n + b, weights=score_a, minlength=n * n)
    w += np.bincount(b * n + a, weights=1.0 - score_a, minlength=n * n)
    return w.reshape(n, n).astype(np.float64)


def _objective(theta: NDArray[np.float64], w: NDArray[np.float64], reg: float) -> float:
    diff = theta[None, :] - theta[:, None]  # θ_j − θ_i: the loss of i against j is softplus of it
    return float(np.sum(w * np.logaddexp(0.0, diff)) + reg * np.sum(theta**2))


def bt_fit(
    w: NDArray[np.float64], reg: float = DEFAULT_REG, tol: float = 1e-10, max_iter: int = 200
) -> NDArray[np.float64]:
    """Bradley–Terry log-strengths ``θ`` (summing to zero) maximising the ridge-penalised likelihood
    of the win matrix ``w`` (Newton's method with backtracking)."""
    n = w.shape[0]
    theta = np.zeros(n)
    if n < 2:
        return theta
    ridge = max(reg, 1e-12)
    current = _objective(theta, w, ridge)
    for _ in range(max_iter):
        p = 1.0 / (1.0 + np.exp(theta[None, :] - theta[:, None]))  # P(i beats j)
        lost = w * (1.0 - p)
        grad = -lost.sum(axis=1) + lost.sum(axis=0) + 2 * ridge * theta
        c = w * p * (1.0 - p)
        c = c + c.T
        hess = np.diag(c.sum(axis=1)) - c + 2 * ridge * np.eye(n)
        step = np.linalg.solve(hess, grad)
        t = 1.0
        while True:
            candidate = theta - t * step
            value = _objective(candidate, w, ridge)
            if value <= current + 1e-12 * abs(current) or t < 1e-8:
                break
            t /= 2
        theta, current = candidate, value
        if float(np.max(np.abs(t * step))) < tol:
            break
    return np.asarray(theta - theta.mean(), dtype=np.float64)


def to_rating(theta: NDArray[np.float64]) -> NDArray[np.float64]:
    """The Elo-like scale: ``400 · log10(e^θ) + 1000``."""
    return SCALE * theta / math.log(10.0) + BASE_RATING


# ------------------------------------------------------------------------------ Elo
def elo_expected(r_a: float, r_b: float) -> float:
    """``E_A = 1 / (1 + 10^((R_B − R_A) / 400))``."""
    return float(1.0 / (1.0 + 10.0 ** ((r_b - r_a) / SCALE)))


def elo_update(r_a: float, r_b: float, score_a: float, k: float) -> tuple[float, float]:
    """Both ratings after one battle: ``R_A' = R_A + K·(S_A − E_A)`` and the same for B."""
    e_a = elo_expected(r_a, r_b)
    return r_a + k * (score_a - e_a), r_b + k * ((1.0 - score_a) - (1.0 - e_a))


def elo_run(
    a: NDArray[np.intp], b: NDArray[np.intp], score_a: NDArray[np.float64], n: int, k: float, initial: float
) -> NDArray[np.float64]:
    """Online Elo over the battles in the order given, every system starting at ``initial``."""
    ratings = [initial] * n
    for i, j, s in zip(a.tolist(), b.tolist(), score_a.tolist(), strict=True):
        ratings[i], ratings[j] = elo_update(ratings[i], ratings[j], s, k)
    return np.asarray(ratings)


# ------------------------------------------------------------------------------ the ranking
def _anchored(ratings: NDArray[np.float64], index: int | None, value: float | None) -> NDArray[np.float64]:
    if index is None or value is None:
        return ratings
    return np.asarray(ratings + (value - ratings[index]), dtype=np.float64)


def _maybe(values: NDArray[np.float64] | None, i: int) -> float | None:
    return None if values is None or not math.isfinite(values[i]) else float(values[i])


def _bootstrap_draws(
    fit: Callable[[NDArray[np.intp], NDArray[np.intp], NDArray[np.float64]], NDArray[np.float64]],
    a: NDArray[np.intp],
    b: NDArray[np.intp],
    s: NDArray[np.float64],
    n: int,
    bootstrap: int,
    seed: int | None,
    anchor_index: int | None,
    progress: Callable[[], None] | None,
) -> NDArray[np.float64]:
    """Ratings refitted on ``bootstrap`` resamples of the battles (rows), NaN for a system that did
    not play in a resample (its rating there would only be the prior's), and a whole row of NaN when
    the anchor did not play (nothing to shift by)."""
    rng = np.random.default_rng(seed)
    draws = np.empty((bootstrap, n))
    for r in range(bootstrap):
        pick = rng.integers(0, len(a), len(a))
        draws[r] = fit(a[pick], b[pick], s[pick])
        played = np.bincount(a[pick], minlength=n) + np.bincount(b[pick], minlength=n)
        draws[r, played == 0] = np.nan
        if anchor_index is not None and played[anchor_index] == 0:
            draws[r] = np.nan
        if progress is not None:
            progress()
    return draws


def rank_battles(
    battles: Sequence[Battle],
    *,
    method: str = "bt",
    bootstrap: int = 1000,
    seed: int | None = 0,
    confidence: float = 0.95,
    anchor: Mapping[str, float] | None = None,
    k: float = 4.0,
    initial: float = BASE_RATING,
    reg: float = DEFAULT_REG,
    progress: Callable[[], None] | None = None,
) -> Ranking:
    """Rate the systems of ``battles`` by Bradley–Terry (``method="bt"``) or online Elo
    (``"elo"``, battles in the order given, K factor ``k``, ``initial`` rating), with percentile
    bootstrap intervals over ``bootstrap`` resamples of the battles (0: none). ``anchor`` maps one
    system to the rating it is fixed at; ``progress`` is called after each resample.
    Raises ValueError for an unknown method or anchor."""
    if method not in ("bt", "elo"):
        raise ValueError(f"unknown ranking method {method!r}; expected 'bt' or 'elo'")
    names = sorted({x for a_, b_, _ in battles for x in (a_, b_)})
    index = {name: i for i, name in enumerate(names)}
    anchor_index, anchor_value = None, None
    if anchor:
        if len(anchor) != 1:
            raise ValueError("anchor: give exactly one SYSTEM=RATING")
        ((anchor_name, anchor_value),) = anchor.items()
        if anchor_name not in index:
            raise ValueError(f"anchor: no system named {anchor_name!r} in the votes")
        anchor_index = index[anchor_name]
    n = len(names)
    a = np.array([index[x[0]] for x in battles], dtype=np.intp)
    b = np.array([index[x[1]] for x in battles], dtype=np.intp)
    s = np.array([float(x[2]) for x in battles], dtype=np.float64)

    def fit(ai: NDArray[np.intp], bi: NDArray[np.intp], si: NDArray[np.float64]) -> NDArray[np.float64]:
        if method == "bt":
            ratings = to_rating(bt_fit(win_matrix(ai, bi, si, n), reg=reg))
        else:
            ratings = elo_run(ai, bi, si, n, k, initial)
        return _anchored(ratings, anchor_index, anchor_value)

    point = fit(a, b, s)
    lower = upper = None
    if bootstrap > 0 and len(battles) > 0:
        draws = _bootstrap_draws(fit, a, b, s, n, bootstrap, seed, anchor_index, progress)
        alpha = (1.0 - confidence) / 2
        with warnings.catch_warnings():  # a system absent from every resample: no interval (NaN)
            warnings.simplefilter("ignore", RuntimeWarning)
            lower, upper = np.nanquantile(draws, alpha, axis=0), np.nanquantile(draws, 1.0 - alpha, axis=0)
    systems = []
    for i, name in enumerate(names):
        as_a, as_b = a == i, b == i
        wins = int(np.sum(s[as_a] == 1.0) + np.sum(s[as_b] == 0.0))
        ties = int(np.sum(s[as_a] == 0.5) + np.sum(s[as_b] == 0.5))
        played = int(np.sum(as_a) + np.sum(as_b))
        systems.append(
            SystemRating(
                name,
                float(point[i]),
                _maybe(lower, i),
                _maybe(upper, i),
                played,
                wins,
                ties,
                played - wins - ties,
            )
        )
    systems.sort(key=lambda x: (-x.rating, x.system))
    options: dict[str, Any] = {"bootstrap": bootstrap, "seed": seed, "anchor": dict(anchor or {})}
    if method == "elo":
        options.update(k=k, initial=initial)
    else:
        options.update(reg=reg)
    return Ranking(method, systems, len(battles), confidence, options)
