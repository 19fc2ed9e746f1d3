"""compare_jailbreak on hand-built paired runs in a real SQLite store: per category defect rates with
Wilson intervals, the paired difference with its bootstrap interval and McNemar's test, the share of
pairs more severe under attack, all equal to their definitions; unpaired rows reported, never
matched."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest
from scipy.stats import binomtest
from tests.compare.stored_runs import FAIL, Cell, put_run

from touchstone.compare import compare_jailbreak
from touchstone.errors import ConfigurationError, InputValidationError
from touchstone.stats.aggregators import wilson_interval
from touchstone.stats.paired import mcnemar, paired_bootstrap_ci
from touchstone.store import open_store
from touchstone.store.base import Store

CATEGORIES = ("violence", "sexual", "self_harm", "hate_unfairness")
KEYS = [("cs", c) for c in CATEGORIES]


@pytest.fixture
def store() -> Iterator[Store]:
    s = open_store(":memory:")
    yield s
    s.close()


def severities(rng: np.random.Generator, n: int, shift: int) -> dict[tuple[str, str], list[Cell]]:
    cols: dict[tuple[str, str], list[Cell]] = {}
    for key in KEYS:
        values = np.clip(rng.integers(0, 6, n) + rng.integers(0, shift + 1, n), 0, 7)
        cols[key] = [FAIL if rng.random() < 0.08 else float(v) for v in values]
    return cols


def wilson(k: int, n: int) -> list[float]:
    ci = binomtest(k, n).proportion_ci(method="wilson")
    return [ci.low, ci.high]


def test_numbers_equal_their_definitions(store: Store) -> None:
    for seed in range(5):
        rng = np.random.default_rng(seed)
        n = int(rng.integers(8, 50))
        ids = [f"adv-{i}" for i in range(n)]
        base_cols = severities(rng, n, 0)
        att_cols = severities(rng, n, 3)
        # the attacked run lacks the first two rows, has two rows of its own, and stores rows reversed
        att_ids = [*ids[2:][::-1], "extra-1", "extra-2"]
        att_stored = {k: [*v[2:][::-1], 7.0, 7.0] for k, v in att_cols.items()}
        baseline = put_run(store, ids, base_cols, lower_is_better=KEYS)
        attacked = put_run(store, att_ids, att_stored, lower_is_better=KEYS)
        level = float(rng.integers(2, 7))
        result = compare_jailbreak(store, baseline, attacked, defect_level=level, n_boot=300, seed=seed)
        doc = result.as_dict()
        json.dumps(doc)
        assert result.match_by == "id" and result.n_pairs == n - 2
        assert result.unpaired_baseline == ["adv-0", "adv-1"]
        assert result.unpaired_attacked == ["extra-1", "extra-2"]
        assert [c.category for c in result.categories] == list(CATEGORIES)
        higher = compared = 0
        for i in range(2, n):  # the pairs
            both = [(base_cols[k][i], att_cols[k][i]) for k in KEYS
                    if base_cols[k][i] != FAIL and att_cols[k][i] != FAIL]
            compared += bool(both)
            higher += any(float(a) > float(b) for b, a in both)  # type: ignore[arg-type]
        for key, c in zip(KEYS, doc["categories"], strict=True):
            pairs = [(float(b), float(a)) for b, a in zip(base_cols[key][2:], att_cols[key][2:], strict=True)  # type: ignore[arg-type]
                     if b != FAIL and a != FAIL]
            db = np.array([b >= level for b, _ in pairs])
            da = np.array([a >= level for _, a in pairs])
            assert c["n_pairs"] == len(pairs)
            assert c["n_failed_baseline"] == sum(v == FAIL for v in base_cols[key][2:])
            assert c["n_failed_attacked"] == sum(v == FAIL for v in att_cols[key][2:])
            assert c["baseline"]["n_defects"] == int(db.sum()) and c["baseline"]["n"] == len(pairs)
            assert c["baseline"]["defect_rate"] == pytest.approx(db.mean())
            assert c["attacked"]["defect_rate"] == pytest.approx(da.mean())
            assert c["baseline"]["ci"] == pytest.approx(wilson(int(db.sum()), len(pairs)))
            assert c["attacked"]["ci"] == pytest.approx(wilson(int(da.sum()), len(pairs)))
            d = da.astype(float) - db.astype(float)
            assert c["difference"] == pytest.approx(d.mean())
            assert c["ci"] == pytest.approx(list(paired_bootstrap_ci(d, n_boot=300, seed=seed)))
            assert c["mcnemar"]["p_value"] == pytest.approx(
                mcnemar(int(np.sum(db & ~da)), int(np.sum(da & ~db))).p_value)
            # every scored row of each run, unpaired ones included
            all_base = [float(v) for v in base_cols[key] if v != FAIL]  # type: ignore[arg-type]
            all_att = [float(v) for v in att_stored[key] if v != FAIL]  # type: ignore[arg-type]
            k_base = sum(v >= level for v in all_base)
            assert c["baseline_all_rows"]["n"] == len(all_base)
            assert c["baseline_all_rows"]["defect_rate"] == pytest.approx(k_base / len(all_base))
            assert c["attacked_all_rows"]["n_defects"] == sum(v >= level for v in all_att)
        assert doc["higher_severity"]["n_pairs"] == compared
        assert doc["higher_severity"]["n_pairs_higher"] == higher
        assert doc["higher_severity"]["share"] == pytest.approx(higher / compared)
        assert doc["higher_severity"]["ci"] == pytest.approx(list(wilson_interval(higher, compared)))


def test_a_hand_computed_example(store: Store) -> None:
    base = put_run(store, ["a", "b", "c", "d"], {("cs", "violence"): [0.0, 5.0, 2.0, 3.0],
                                                 ("cs", "sexual"): [0.0, 1.0, 6.0, 3.0]})
    att = put_run(store, ["a", "b", "c", "e"], {("cs", "violence"): [4.0, 5.0, 1.0, 3.0],
                                                ("cs", "sexual"): [0.0, 1.0, 1.0, 3.0]})
    result = compare_jailbreak(store, base, att)
    violence, sexual = result.categories
    assert (violence.baseline.n_defects, violence.attacked.n_defects, violence.n_pairs) == (1, 2, 3)
    assert violence.difference == pytest.approx(1 / 3)
    assert (violence.n_newly_defective, violence.n_no_longer_defective) == (1, 0)
    assert sexual.difference == pytest.approx(-1 / 3)
    # pairs more severe when attacked in any category: only "a" (violence 0 -> 4)
    assert (result.n_pairs_higher, result.n_pairs_compared) == (1, 3)
    assert result.unpaired_baseline == ["d"] and result.unpaired_attacked == ["e"]
    assert violence.baseline_all_rows.n == 4 and violence.baseline_all_rows.n_defects == 1


def test_rows_are_paired_by_id_or_not_at_all(store: Store) -> None:
    no_ids = put_run(store, None, {("cs", "violence"): [1.0, 5.0]})
    also_none = put_run(store, None, {("cs", "violence"): [6.0, 5.0]})
    with pytest.raises(InputValidationError, match="have no id"):
        compare_jailbreak(store, no_ids, also_none)
    by_position = compare_jailbreak(store, no_ids, also_none, match_by="index")
    assert by_position.match_by == "index" and by_position.categories[0].difference == pytest.approx(0.5)


def test_bad_input(store: Store) -> None:
    base = put_run(store, [1, 2], {("cs", "violence"): [1.0, 5.0]})
    other = put_run(store, [1, 2], {("f1", "f1_score"): [0.5, 0.5]})
    with pytest.raises(InputValidationError, match="no harm category scored in both"):
        compare_jailbreak(store, base, other)
    with pytest.raises(InputValidationError, match="not a harm category"):
        compare_jailbreak(store, base, base, categories=["toxicity"])
    with pytest.raises(ConfigurationError, match="defect_level"):
        compare_jailbreak(store, base, base, defect_level=9)
    with pytest.raises(InputValidationError, match="no run 'missing'"):
        compare_jailbreak(store, base, "missing")


def test_defect_level_moves_the_rates(store: Store) -> None:
    base = put_run(store, [1, 2, 3], {("v", "violence"): [1.0, 3.0, 5.0]})
    att = put_run(store, [1, 2, 3], {("v", "violence"): [2.0, 4.0, 6.0]})
    at4 = compare_jailbreak(store, base, att).categories[0]
    at2 = compare_jailbreak(store, base, att, defect_level=2).categories[0]
    assert [at4.baseline.rate, at4.attacked.rate] == pytest.approx([1 / 3, 2 / 3])
    assert [at2.baseline.rate, at2.attacked.rate] == pytest.approx([2 / 3, 1.0])
