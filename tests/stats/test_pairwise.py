"""Bradley–Terry and Elo against their definitions and choix: the maximum-likelihood strengths equal
choix's on many random vote sets (ties as half wins: each vote doubled, a tie as one win each way),
planted strengths are recovered, bootstrap intervals cover the planted values at about their nominal
rate over seeded trials, and Elo updates equal the formula."""

from __future__ import annotations

import math

import choix
import numpy as np
import pytest

from touchstone.stats.pairwise import (
    DEFAULT_REG,
    _bootstrap_draws,
    bt_fit,
    elo_expected,
    elo_update,
    rank_battles,
    to_rating,
    win_matrix,
)


def random_battles(
    rng: np.random.Generator, theta: np.ndarray, n_battles: int, tie_rate: float = 0.1
) -> list[tuple[str, str, float]]:
    n = len(theta)
    battles = []
    for _ in range(n_battles):
        i, j = rng.choice(n, size=2, replace=False)
        if rng.random() < tie_rate:
            s = 0.5
        else:
            s = 1.0 if rng.random() < 1 / (1 + math.exp(theta[j] - theta[i])) else 0.0
        battles.append((f"s{i}", f"s{j}", s))
    return battles


def doubled(battles: list[tuple[str, str, float]], names: list[str]) -> list[tuple[int, int]]:
    """choix's (winner, loser) pairs: each vote twice, a tie as one win each way."""
    index = {n: i for i, n in enumerate(names)}
    data = []
    for a, b, s in battles:
        ia, ib = index[a], index[b]
        if s == 1.0:
            data += [(ia, ib), (ia, ib)]
        elif s == 0.0:
            data += [(ib, ia), (ib, ia)]
        else:
            data += [(ia, ib), (ib, ia)]
    return data


def choix_theta(battles: list[tuple[str, str, float]], names: list[str], alpha: float) -> np.ndarray:
    data = doubled(battles, names)
    theta = choix.opt_pairwise(len(names), data, alpha=alpha, method="Newton-CG")
    values: np.ndarray = np.asarray(theta, dtype=float)
    return np.asarray(values - values.mean(), dtype=float)


@pytest.mark.parametrize("trial", range(30))
def test_bt_equals_choix(trial: int) -> None:
    rng = np.random.default_rng(trial)
    n = int(rng.integers(2, 9))
    theta = rng.normal(0, 1, n)
    battles = random_battles(rng, theta, int(rng.integers(30, 300)), tie_rate=float(rng.uniform(0, 0.3)))
    names = sorted({x for a, b, _ in battles for x in (a, b)})
    index = {x: i for i, x in enumerate(names)}
    a = np.array([index[x[0]] for x in battles])
    b = np.array([index[x[1]] for x in battles])
    s = np.array([x[2] for x in battles])
    ours = bt_fit(win_matrix(a, b, s, len(names)))  # the default, tiny ridge
    # our objective is half of choix's on doubled data, so choix's alpha is twice our ridge
    np.testing.assert_allclose(ours, choix_theta(battles, names, alpha=2 * DEFAULT_REG), atol=1e-5)
    ilsr = choix.ilsr_pairwise(
        len(names), doubled(battles, names), alpha=2 * DEFAULT_REG, tol=1e-12, max_iter=10_000
    )
    np.testing.assert_allclose(ours, ilsr - ilsr.mean(), atol=1e-3)  # ILSR's prior is not a ridge: close
    assert abs(ours.sum()) < 1e-9
    larger = bt_fit(win_matrix(a, b, s, len(names)), reg=1e-2)
    np.testing.assert_allclose(larger, choix_theta(battles, names, alpha=2e-2), atol=1e-5)


def test_unbeaten_system_gets_a_finite_top_rating() -> None:
    battles = [("top", "mid", 1.0)] * 5 + [("mid", "low", 1.0), ("low", "mid", 1.0), ("top", "low", 0.5)]
    ranking = rank_battles(battles, bootstrap=20, seed=0)
    assert ranking.systems[0].system == "top"
    assert all(math.isfinite(s.rating) for s in ranking.systems)


def test_win_matrix_counts_ties_as_halves() -> None:
    w = win_matrix(np.array([0, 0, 1]), np.array([1, 1, 0]), np.array([1.0, 0.5, 0.0]), 2)
    np.testing.assert_allclose(w, [[0.0, 2.5], [0.5, 0.0]])


def test_recovers_planted_strengths() -> None:
    rng = np.random.default_rng(7)
    theta = np.array([-1.0, -0.3, 0.0, 0.4, 1.2])
    battles = random_battles(rng, theta, 20000, tie_rate=0.0)
    ranking = rank_battles(battles, bootstrap=0)
    ratings = {s.system: s.rating for s in ranking.systems}
    planted = to_rating(theta - theta.mean())
    for i, value in enumerate(planted):
        assert abs(ratings[f"s{i}"] - value) < 15  # 15 rating points ~ 0.09 in θ
    assert [s.system for s in ranking.systems] == ["s4", "s3", "s2", "s1", "s0"]


def test_bootstrap_coverage_near_nominal() -> None:
    theta = np.array([-0.8, -0.2, 0.3, 0.7])
    planted = to_rating(theta - theta.mean())
    covered = total = 0
    for trial in range(30):
        rng = np.random.default_rng(1000 + trial)
        battles = random_battles(rng, theta, 300, tie_rate=0.0)
        ranking = rank_battles(battles, bootstrap=100, seed=trial)
        for sr in ranking.systems:
            i = int(sr.system[1:])
            assert sr.lower is not None and sr.upper is not None
            covered += sr.lower <= planted[i] <= sr.upper
            total += 1
    rate = covered / total
    assert 0.88 <= rate <= 0.99, rate  # 114 of 120 (0.95) with these seeds


def test_elo_update_equals_formula() -> None:
    rng = np.random.default_rng(3)
    for _ in range(200):
        ra, rb = rng.uniform(600, 1600, 2)
        s = float(rng.choice([0.0, 0.5, 1.0]))
        k = float(rng.uniform(1, 40))
        ea = 1 / (1 + 10 ** ((rb - ra) / 400))
        na, nb = elo_update(ra, rb, s, k)
        assert na == pytest.approx(ra + k * (s - ea))
        assert nb == pytest.approx(rb + k * ((1 - s) - (1 - ea)))
        assert elo_expected(ra, rb) == pytest.approx(ea)


def test_elo_ranking_sequential_and_initial() -> None:
    battles = [("a", "b", 1.0), ("a", "b", 0.5), ("b", "a", 1.0)]
    ranking = rank_battles(battles, method="elo", k=32, initial=1500, bootstrap=0)
    ra = rb = 1500.0
    for x, _, s in battles:
        if x == "a":
            ra, rb = elo_update(ra, rb, s, 32)
        else:
            rb, ra = elo_update(rb, ra, s, 32)
    got = {s.system: s.rating for s in ranking.systems}
    assert got == {"a": pytest.approx(ra), "b": pytest.approx(rb)}
    assert ranking.options["k"] == 32


def test_anchor_and_record() -> None:
    battles = [("a", "b", 1.0), ("a", "b", 1.0), ("b", "a", 0.5), ("c", "a", 0.0), ("c", "b", 1.0)]
    ranking = rank_battles(battles, bootstrap=50, seed=1, anchor={"b": 1200.0})
    by = {s.system: s for s in ranking.systems}
    assert by["b"].rating == pytest.approx(1200.0)
    assert by["a"].wins == 3 and by["a"].ties == 1 and by["a"].losses == 0 and by["a"].battles == 4
    assert by["a"].win_rate == pytest.approx(3.5 / 4)
    assert by["b"].lower == pytest.approx(1200.0) and by["b"].upper == pytest.approx(1200.0)
    with pytest.raises(ValueError, match="no system named"):
        rank_battles(battles, anchor={"zz": 1.0})


def test_seeded_bootstrap_repeats() -> None:
    rng = np.random.default_rng(5)
    battles = random_battles(rng, np.array([0.0, 0.5, 1.0]), 100)
    one = rank_battles(battles, bootstrap=100, seed=9).as_dict()
    two = rank_battles(battles, bootstrap=100, seed=9).as_dict()
    assert one == two


def test_bootstrap_leaves_out_systems_absent_from_a_resample() -> None:
    a, b, s = np.array([0, 1, 0]), np.array([1, 2, 2]), np.array([1.0, 0.5, 0.0])
    draws = _bootstrap_draws(lambda ai, bi, si: np.zeros(4), a, b, s, 4, 200, 0, None, None)
    assert np.isnan(draws[:, 3]).all()  # never played
    rng = np.random.default_rng(0)
    for r in range(200):
        pick = rng.integers(0, 3, 3)
        played = set(a[pick]) | set(b[pick])
        assert [not np.isnan(draws[r, i]) for i in range(3)] == [i in played for i in range(3)]
    anchored = _bootstrap_draws(lambda ai, bi, si: np.zeros(4), a, b, s, 4, 200, 0, 0, None)
    rows_without_anchor = np.isnan(anchored[:, 0])
    assert rows_without_anchor.any() and np.isnan(anchored[rows_without_anchor]).all()
