"""compare_runs and rows_changed_most on hand-built runs in a real SQLite store: every number equal to
its definition, rows paired by id (never by guess), failed scores counted and left out, verdicts by
the metric's direction, and the error rates of the verdicts over seeded trials."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests
from tests.compare.stored_runs import FAIL, Cell, put_run

from touchstone.compare import UnknownRunError, compare_runs, rows_changed_most
from touchstone.errors import InputValidationError
from touchstone.scores import score_line
from touchstone.stats.paired import mcnemar, paired_bootstrap_ci, sign_flip_test, wilcoxon_signed_rank
from touchstone.store import RunStore, open_store
from touchstone.store.base import ScoreRecord, Store

F1 = ("f1", "f1_score")
RATING = ("judge", "coherence")
HARM = ("harm", "violence")


@pytest.fixture
def store() -> Iterator[Store]:
    s = open_store(":memory:")
    yield s
    s.close()


def random_cells(rng: np.random.Generator, n: int, shift: float = 0.0, fail_share: float = 0.1) -> list[Cell]:
    values = np.clip(rng.normal(0.5 + shift, 0.25, n), 0, 1)
    return [FAIL if rng.random() < fail_share else float(v) for v in values]


def test_numbers_equal_their_definitions(store: Store) -> None:
    for seed in range(6):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(5, 60))
        ids = [f"q{i}" for i in range(n)]
        cols_a: dict[tuple[str, str], list[Cell]] = {
            F1: random_cells(rng, n), RATING: [float(x) for x in rng.integers(1, 6, n)],
            HARM: [float(x) for x in rng.integers(0, 8, n)],
        }
        cols_b: dict[tuple[str, str], list[Cell]] = {
            F1: random_cells(rng, n, shift=0.1), RATING: [float(x) for x in rng.integers(1, 6, n)],
            HARM: [float(x) for x in rng.integers(0, 8, n)],
        }
        order = rng.permutation(n)  # B stores the same rows in another order: pairing is by id
        ids_b = [ids[i] for i in order]
        cols_b = {k: [v[i] for i in order] for k, v in cols_b.items()}
        thresholds = {F1: 0.5, RATING: 3.0, HARM: 3.0}
        a = put_run(store, ids, cols_a, thresholds=thresholds, lower_is_better=[HARM])
        b = put_run(store, ids_b, cols_b, thresholds=thresholds, lower_is_better=[HARM])
        result = compare_runs(store, a, b, alpha=0.1, n_boot=500, seed=seed)
        assert result.match_by == "id" and result.n_matched == n and not result.unmatched_a
        inverse = np.argsort(order)
        perm_ps: list[float] = []
        mc_ps: list[float] = []
        order_of_metrics = [(m.evaluator, m.score) for m in result.metrics]
        assert sorted(order_of_metrics) == sorted([F1, RATING, HARM])
        for key in order_of_metrics:
            m = result.metric(f"{key[0]}.{key[1]}")
            va = cols_a[key]
            vb = [cols_b[key][inverse[i]] for i in range(n)]  # B's cell of A's row i
            pairs = [(x, y) for x, y in zip(va, vb, strict=True) if x != FAIL and y != FAIL]
            x = np.array([p[0] for p in pairs], dtype=float)
            y = np.array([p[1] for p in pairs], dtype=float)
            d = y - x
            assert m.n_pairs == len(pairs)
            assert m.n_failed_a == sum(v == FAIL for v in va) and m.n_failed_b == sum(v == FAIL for v in vb)
            assert m.mean_a == pytest.approx(x.mean()) and m.mean_b == pytest.approx(y.mean())
            assert m.difference == pytest.approx(d.mean())
            assert m.ci == pytest.approx(paired_bootstrap_ci(d, n_boot=500, seed=seed, level=0.9))
            ref = sign_flip_test(d, seed=seed)
            assert m.p_value == pytest.approx(ref.p_value) and m.test == ref.method
            assert m.wilcoxon_p == pytest.approx(wilcoxon_signed_rank(d).p_value)
            lower = key == HARM
            pa = x <= 3 if lower else x >= thresholds[key]
            pb = y <= 3 if lower else y >= thresholds[key]
            assert m.mcnemar is not None
            assert m.mcnemar["a_pass_b_fail"] == int(np.sum(pa & ~pb))
            assert m.mcnemar["a_fail_b_pass"] == int(np.sum(~pa & pb))
            expected_mc = mcnemar(int(np.sum(pa & ~pb)), int(np.sum(~pa & pb)))
            assert m.mcnemar["p_value"] == pytest.approx(expected_mc.p_value)
            assert m.pass_rate_a == pytest.approx(pa.mean()) and m.pass_rate_b == pytest.approx(pb.mean())
            assert m.higher_is_better is not lower
            perm_ps.append(ref.p_value)
            mc_ps.append(m.mcnemar["p_value"])
        adjusted = multipletests(perm_ps + mc_ps, method="holm")[1]
        for i, m in enumerate(result.metrics):
            assert m.p_holm == pytest.approx(adjusted[i])
            assert m.mcnemar is not None and m.mcnemar["p_holm"] == pytest.approx(adjusted[3 + i])
            assert m.difference is not None
            expected = "no detectable difference"
            if adjusted[i] < 0.1 and m.difference != 0:
                expected = "better" if (m.difference > 0) == m.higher_is_better else "worse"
            assert m.verdict == expected
        json.dumps(result.as_dict())  # JSON-ready as it is


def test_direction_decides_the_verdict(store: Store) -> None:
    ids = list(range(30))
    base = [float(i % 4) for i in ids]
    a = put_run(store, ids, {HARM: base, F1: [0.5] * 30}, lower_is_better=[HARM])
    b = put_run(store, ids, {HARM: [v + 2 for v in base], F1: [0.9] * 30}, lower_is_better=[HARM])
    result = compare_runs(store, a, b)
    assert result.metric("harm.violence").verdict == "worse"  # severity went up: lower is better
    assert result.metric("f1.f1_score").verdict == "better"
    assert [m.metric for m in result.regressions] == ["harm.violence"]
    assert [m.metric for m in result.improvements] == ["f1.f1_score"]
    reverse = compare_runs(store, b, a)
    assert reverse.metric("harm.violence").verdict == "better"
    assert reverse.metric("f1.f1_score").verdict == "worse"


def test_a_pass_rate_drop_is_a_regression_even_when_the_mean_holds(store: Store) -> None:
    ids = list(range(40))
    a = put_run(store, ids, {F1: [0.55] * 40}, thresholds={F1: 0.5})
    # the same mean, but half the rows now fall under the threshold
    b = put_run(store, ids, {F1: [0.45, 0.65] * 20}, thresholds={F1: 0.5})
    m = compare_runs(store, a, b).metric("f1.f1_score")
    assert m.difference == pytest.approx(0.0)
    assert m.verdict == "no detectable difference"
    assert m.pass_verdict == "worse" and m.regressed


def test_unmatched_rows_are_reported_never_paired(store: Store) -> None:
    a = put_run(store, ["x", "y", "z", 7], {F1: [0.1, 0.2, 0.3, 0.4]})
    b = put_run(store, ["y", "z", "w", "7"], {F1: [0.5, 0.6, 0.7, 0.8]})
    result = compare_runs(store, a, b)
    assert result.match_by == "id"
    assert result.n_matched == 2
    assert result.unmatched_a == ["x", 7]  # the integer 7 is not the string "7"
    assert result.unmatched_b == ["w", "7"]
    m = result.metric("f1.f1_score")
    assert m.n_pairs == 2 and m.difference == pytest.approx(0.3)
    doc = result.as_dict()
    assert doc["rows"] == {"a": 4, "b": 4, "matched": 2, "unmatched_a": 2, "unmatched_b": 2}
    assert doc["unmatched_a"] == ["x", 7] and doc["match_by"] == "id"


def test_rows_without_ids_pair_by_position_and_say_so(store: Store) -> None:
    a = put_run(store, None, {F1: [0.1, 0.2, 0.3]})
    b = put_run(store, None, {F1: [0.2, 0.2, 0.3, 0.9]})
    result = compare_runs(store, a, b)
    assert result.match_by == "index"
    assert result.n_matched == 3 and result.unmatched_b == [3] and result.unmatched_a == []


def test_ids_on_some_rows_or_repeated_ids_are_errors(store: Store) -> None:
    with_ids = put_run(store, ["a", "b"], {F1: [0.1, 0.2]})
    without = put_run(store, None, {F1: [0.1, 0.2]})
    with pytest.raises(InputValidationError, match="2 of 2 rows have no id"):
        compare_runs(store, with_ids, without)
    assert compare_runs(store, with_ids, without, match_by="index").n_matched == 2
    repeated = put_run(store, ["a", "a"], {F1: [0.1, 0.2]})
    with pytest.raises(InputValidationError, match="repeated: 'a'"):
        compare_runs(store, with_ids, repeated)
    with pytest.raises(InputValidationError, match="have no id"):
        compare_runs(store, without, without, match_by="id")


def test_failed_scores_are_counted_and_left_out(store: Store) -> None:
    ids = list(range(6))
    a = put_run(store, ids, {F1: [0.1, FAIL, 0.3, 0.4, FAIL, 0.6]})
    b = put_run(store, ids, {F1: [0.2, 0.2, FAIL, 0.5, FAIL, None]})  # row 5: no result in B
    m = compare_runs(store, a, b).metric("f1.f1_score")
    assert (m.n_pairs, m.n_failed_a, m.n_failed_b, m.n_missing) == (2, 2, 2, 1)
    assert m.mean_a == pytest.approx(0.25) and m.mean_b == pytest.approx(0.35)


def test_every_score_failed_is_not_compared(store: Store) -> None:
    a = put_run(store, [1, 2], {F1: [FAIL, FAIL], RATING: [1.0, 2.0]})
    b = put_run(store, [1, 2], {F1: [0.5, 0.5], RATING: [1.0, 2.0]})
    result = compare_runs(store, a, b)
    m = result.metric("f1.f1_score")
    assert m.n_pairs == 0 and m.verdict == "not compared" and m.p_holm is None and m.mean_a is None
    assert result.metric("judge.coherence").verdict == "no detectable difference"
    json.dumps(result.as_dict())


def test_metric_selection_and_bad_input(store: Store) -> None:
    a = put_run(store, [1, 2], {F1: [0.1, 0.2], RATING: [1.0, 2.0], ("f1", "extra"): [1.0, 1.0]})
    b = put_run(store, [1, 2], {F1: [0.1, 0.2], RATING: [1.0, 2.0]})
    assert [m.metric for m in compare_runs(store, a, b).metrics] == ["f1.f1_score", "judge.coherence"]
    for wanted, expected in ((["f1"], ["f1.f1_score"]), (["coherence"], ["judge.coherence"]),
                             (["judge.coherence", "f1_score"], ["judge.coherence", "f1.f1_score"])):
        assert [m.metric for m in compare_runs(store, a, b, metrics=wanted).metrics] == expected
    with pytest.raises(InputValidationError, match=r"no metric 'extra' in both runs; available: f1\.f1"):
        compare_runs(store, a, b, metrics=["extra"])
    with pytest.raises(UnknownRunError, match="no run 'nope'"):
        compare_runs(store, a, "nope")
    with pytest.raises(InputValidationError, match="between 0 and 1"):
        compare_runs(store, a, b, alpha=1.5)
    with pytest.raises(InputValidationError, match="match_by"):
        compare_runs(store, a, b, match_by="line")  # type: ignore[arg-type]


def test_direction_from_the_registry_when_the_run_has_no_summary(tmp_path: object) -> None:
    s = RunStore(":memory:")
    run_a = s.create_run({"evaluators": {"v": {"metric": "violence"}}}, None, "test")
    run_b = s.create_run({"evaluators": {"v": {"metric": "violence"}}}, None, "test")
    for run, values in ((run_a, [0.0] * 12), (run_b, [5.0] * 12)):
        s.put_scores(run, "v", [
            ScoreRecord(i, {}, False, None, [score_line("violence", v, None, "ok", None, None)])
            for i, v in enumerate(values)
        ])
    m = compare_runs(s, run_a, run_b).metric("v.violence")
    assert m.higher_is_better is False and m.verdict == "worse"


def test_rows_changed_most(store: Store) -> None:
    ids = ["a", "b", "c", "d"]
    a = put_run(store, ids, {F1: [0.1, 0.5, 0.5, 0.9], RATING: [1.0, 5.0, 3.0, 3.0]})
    b = put_run(store, ["d", "c", "b", "a"], {F1: [0.2, 0.5, 0.6, 0.8], RATING: [3.0, 3.0, 1.0, 1.0]})
    top = rows_changed_most(store, a, b, metric="f1.f1_score", limit=2)
    # a: 0.1 -> 0.8 and d: 0.9 -> 0.2 tie at 0.7 and keep A's row order; b: +0.1 is cut by the limit
    assert [(c.key, c.change) for c in top] == [("a", "better"), ("d", "worse")]
    assert top[1].difference == pytest.approx(-0.7) and top[1].value_a == 0.9 and top[1].value_b == 0.2
    assert top[1].data_a == {"inputs": {"id": "d"}, "target": None, "target_error": None, "outputs": {}}
    assert (top[1].idx_a, top[1].idx_b) == (3, 0)
    # every metric together, each scaled by its spread: rating b (5 -> 1 over a spread of 4) is 1.0
    everything = rows_changed_most(store, a, b, limit=10, with_data=False)
    assert (everything[0].key, everything[0].metric) == ("b", "judge.coherence")
    assert all(c.data_a is None for c in everything)
    assert len(everything) == 3 + 1  # rows whose value did not change are not listed
    json.dumps([c.as_dict() for c in everything])


def test_verdict_error_rates_over_seeded_trials(store: Store) -> None:
    """200 null trials (both runs draw the same distribution, 30 rows, one metric) give a verdict
    other than "no detectable difference" in 1%..10% of trials at alpha 0.05 (about three standard
    errors of 0.015 around 0.05); a planted drop of 0.2 (0.8 standard deviations) over 40 rows is
    called "worse" in at least 95% of 60 trials."""
    rng = np.random.default_rng(42)
    flagged = 0
    for t in range(200):
        a = put_run(store, list(range(30)), {F1: list(rng.normal(0.5, 0.25, 30))})
        b = put_run(store, list(range(30)), {F1: list(rng.normal(0.5, 0.25, 30))})
        verdict = compare_runs(store, a, b, n_boot=200, seed=t).metrics[0].verdict
        flagged += verdict != "no detectable difference"
    assert 0.01 <= flagged / 200 <= 0.10
    worse = 0
    for t in range(60):
        a = put_run(store, list(range(40)), {F1: list(rng.normal(0.5, 0.25, 40))})
        b = put_run(store, list(range(40)), {F1: list(rng.normal(0.3, 0.25, 40))})
        worse += compare_runs(store, a, b, n_boot=200, seed=t).metrics[0].verdict == "worse"
    assert worse / 60 >= 0.95
    assert not math.isnan(flagged)


def test_exported_from_the_package() -> None:
    import touchstone

    assert touchstone.compare_runs is compare_runs
    assert {"compare_runs", "compare_jailbreak"} <= set(touchstone.__all__)


def test_the_same_comparison_on_postgresql(pg_url: str) -> None:
    """The comparison reads through portable queries: the same runs on SQLite and on a real
    PostgreSQL give the same numbers (jailbreak included)."""
    from touchstone.compare import compare_jailbreak

    rng = np.random.default_rng(3)
    ids: list[object] = [f"r{i}" for i in range(25)] + [25, 26]
    cols_a: dict[tuple[str, str], list[Cell]] = {F1: random_cells(rng, 27),
                                                 HARM: [float(x) for x in rng.integers(0, 8, 27)]}
    cols_b: dict[tuple[str, str], list[Cell]] = {F1: random_cells(rng, 27),
                                                 HARM: [float(x) for x in rng.integers(0, 8, 27)]}
    docs = []
    for location in (":memory:", pg_url):
        s = open_store(location)
        try:
            a = put_run(s, ids, cols_a, thresholds={F1: 0.5}, lower_is_better=[HARM])
            b = put_run(s, [*ids[2:], "new"], {k: [*v[2:], 0.5] for k, v in cols_b.items()},
                        thresholds={F1: 0.5}, lower_is_better=[HARM])
            compared = compare_runs(s, a, b).as_dict()
            jailbreak = compare_jailbreak(s, a, b).as_dict()
            changed = [c.as_dict() for c in rows_changed_most(s, a, b, limit=5)]
        finally:
            s.close()
        for doc in (compared, jailbreak):
            for side in ("run_a", "run_b", "baseline", "attacked"):
                doc.pop(side, None)
        docs.append((compared, jailbreak, changed))
    assert docs[0] == docs[1]
    assert docs[0][0]["unmatched_a"] == ["r0", "r1"] and docs[0][0]["unmatched_b"] == ["new"]
