"""engine.sampling and engine.selection: --budget never exceeds the budget and is maximal, --sample N,
diverse covers every stratum or cluster (and follows its allocation), difficult puts a stored run's
planted failures first, uncertain reads its signal or says it has none, and every strategy gives the
same rows for the same seed."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from touchstone.engine.runner import evaluate
from touchstone.engine.sampling import (
    SampleRequest,
    choose_rows,
    order_diverse,
    row_ids,
    rows_of_run,
    take,
)
from touchstone.errors import InputValidationError
from touchstone.evaluators import registry
from touchstone.store.sqlite import RunStore


def _rows(n: int, rng: random.Random) -> list[dict[str, Any]]:
    return [{"id": f"r{i}", "query": f"question {i} about {rng.choice('abc')}", "group": rng.choice("xyzw"),
             "response": "yes", "ground_truth": "yes"} for i in range(n)]


# --------------------------------------------------------------------------- budget and count
def test_budget_never_exceeded_and_maximal_on_random_datasets() -> None:
    rng = random.Random(3)
    for trial in range(300):
        n = rng.randint(1, 60)
        costs = [rng.choice([0.0, rng.uniform(0.0001, 0.5)]) for _ in range(n)]
        budget = rng.uniform(0.001, sum(costs) + 0.5)
        order = list(range(n))
        rng.shuffle(order)
        chosen = take(order, None, budget, costs)
        spent = sum(costs[i] for i in chosen)
        assert spent <= budget, trial
        left = budget - spent
        assert all(costs[i] > left for i in set(range(n)) - set(chosen)), trial  # nothing else fits
        assert chosen == sorted(set(chosen))


@pytest.mark.parametrize("strategy", ["random", "diverse", "difficult"])
def test_choose_rows_with_budget_on_random_datasets(strategy: str) -> None:
    rng = random.Random(11)
    for trial in range(40):
        rows = _rows(rng.randint(2, 40), rng)
        costs = [rng.uniform(0.001, 0.2) for _ in rows]
        budget = rng.uniform(0.01, 2.0)
        req = SampleRequest(budget=budget, strategy=strategy, seed=trial, stratify_by="group")
        sample = choose_rows(rows, req, costs=costs)
        assert sample.estimated_cost is not None
        assert sample.estimated_cost <= budget
        left = budget - sample.estimated_cost
        assert all(costs[i] > left for i in set(range(len(rows))) - set(sample.indices))
        assert sample.row_ids == [rows[i]["id"] for i in sample.indices]


def test_sample_n_and_both_limits() -> None:
    rows = _rows(30, random.Random(1))
    assert len(choose_rows(rows, SampleRequest(n=7, seed=2)).indices) == 7
    assert len(choose_rows(rows, SampleRequest(n=100, seed=2)).indices) == 30
    both = choose_rows(rows, SampleRequest(n=10, budget=0.35, seed=2), costs=[0.1] * 30)
    assert len(both.indices) == 3


def test_budget_needs_a_price() -> None:
    with pytest.raises(InputValidationError, match="--pricing"):
        choose_rows(_rows(3, random.Random(1)), SampleRequest(budget=1.0))


@pytest.mark.parametrize(("request_", "message"), [
    (SampleRequest(n=0), "--sample"), (SampleRequest(budget=-1.0), "--budget"),
    (SampleRequest(n=2, strategy="smart"), "unknown strategy 'smart'"),
    (SampleRequest(n=2, allocation="fair"), "--allocation"),
])
def test_bad_requests(request_: SampleRequest, message: str) -> None:
    with pytest.raises(InputValidationError, match=message):
        request_.check()


# --------------------------------------------------------------------------- diverse
def test_diverse_covers_every_stratum_and_follows_the_allocation() -> None:
    rng = random.Random(5)
    for trial in range(100):
        k = rng.randint(1, 6)
        sizes = [rng.randint(1, 30) for _ in range(k)]
        labels = [g for g, size in enumerate(sizes) for _ in range(size)]
        rng.shuffle(labels)
        for allocation in ("proportional", "equal"):
            order = order_diverse(labels, trial, allocation)
            assert sorted(order) == list(range(len(labels)))
            for n in range(k, len(labels) + 1, 3):
                counts = Counter(labels[i] for i in order[:n])
                assert len(counts) == k  # every stratum covered once n >= k
                open_share = [s / sum(sizes) if allocation == "proportional" else 1 / k for s in sizes]
                for g in range(k):  # within 2 of the allocation, unless the stratum ran out
                    if counts[g] < sizes[g]:
                        assert counts[g] >= open_share[g] * n - 2, (trial, allocation, n, g)


def test_diverse_by_column_counts_strata() -> None:
    rows = _rows(40, random.Random(2))
    sample = choose_rows(rows, SampleRequest(n=8, strategy="diverse", stratify_by="group", seed=1))
    assert set(sample.strata) == {r["group"] for r in rows}
    assert sum(sample.strata.values()) == 8
    with pytest.raises(InputValidationError, match="no such column"):
        choose_rows(rows, SampleRequest(n=8, strategy="diverse", stratify_by="topic"))


def test_diverse_kmeans_covers_every_cluster() -> None:
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(4, 6)) * 20
    assignment = [i % 4 for i in range(48)]
    vectors = {f"q{i}": centres[c] + rng.normal(size=6) for i, c in enumerate(assignment)}
    rows = [{"query": q} for q in vectors]

    def embed(texts: Any) -> Any:
        return np.array([vectors[t] for t in texts])

    sample = choose_rows(rows, SampleRequest(n=6, strategy="diverse", clusters=4, seed=3), embed=embed)
    assert len(sample.strata) == 4
    assert {assignment[i] for i in sample.indices} == {0, 1, 2, 3}
    again = choose_rows(rows, SampleRequest(n=6, strategy="diverse", clusters=4, seed=3), embed=embed)
    assert again.indices == sample.indices


def test_diverse_with_the_local_embedding_model() -> None:
    pytest.importorskip("sentence_transformers")
    from touchstone.embeddings import offline_model_path

    if offline_model_path() is None:
        pytest.skip("the offline MiniLM package is not installed")
    topics = {"weather": ["Will it rain tomorrow?", "How hot is it today?", "Is a storm coming?"],
              "cooking": ["How long to boil an egg?", "What spices go in curry?", "How to bake bread?"],
              "football": ["Who won the cup final?", "How long is a football match?", "Who scored the goal?"]}
    rows = [{"query": q, "topic": t} for t, qs in topics.items() for q in qs]
    sample = choose_rows(rows, SampleRequest(n=3, strategy="diverse", clusters=3, seed=0))
    assert len(sample.strata) == 3
    assert sample.messages and "3 k-means clusters" in sample.messages[0]


# --------------------------------------------------------------------------- difficult and uncertain
def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _fails_on_bad(*, response: str, **_: Any) -> dict[str, float]:
    if response == "boom":
        raise ValueError("planted failure")
    return {"ok": 1.0}


def test_difficult_picks_the_planted_failures_first(tmp_path: Path) -> None:
    rng = random.Random(9)
    rows = _rows(30, rng)
    wrong, failing = [4, 17, 23], [9, 28]
    for i in wrong:
        rows[i]["response"] = "no"  # exact_match below its threshold
    for i in failing:
        rows[i]["response"] = "boom"  # the function metric fails
    data = _write(tmp_path / "rows.jsonl", rows)
    store = RunStore(tmp_path / "runs.db")
    evaluate(data=str(data), evaluators={"exact_match": registry.create("exact_match"), "fn": _fails_on_bad},
             store=store)
    req = SampleRequest(n=5, strategy="difficult", seed=1)
    sample = choose_rows(rows, req, store=store, data=data)
    assert sample.indices == sorted(wrong + failing)
    first = choose_rows(rows, SampleRequest(n=2, strategy="difficult", seed=4), store=store, data=data)
    assert first.indices == failing  # failures rank above low scores
    assert "5 rows failed, scored low or were disputed" in sample.messages[0]
    # another file: no stored run matches, the rows come in random order with a message
    other = _write(tmp_path / "other.jsonl", rows[:10])
    plain = choose_rows(rows[:10], SampleRequest(n=3, strategy="difficult", seed=1), store=store, data=other)
    assert "no stored run" in plain.messages[0]


def test_difficult_reads_a_sampled_run_by_row_id(tmp_path: Path) -> None:
    rows = _rows(20, random.Random(4))
    rows[13]["response"] = "no"
    data = _write(tmp_path / "rows.jsonl", rows)
    store = RunStore(tmp_path / "runs.db")
    first = choose_rows(rows, SampleRequest(n=10, seed=2), data=data)
    if 13 not in first.indices:
        first = choose_rows(rows, SampleRequest(n=20, seed=2), data=data)
    evaluators = {"exact_match": registry.create("exact_match")}
    chosen = [rows[i] for i in first.indices]
    evaluate(data=chosen, evaluators=evaluators, store=store, sampling=first.config())
    again = choose_rows(rows, SampleRequest(n=1, strategy="difficult", seed=7), store=store, data=data)
    assert again.indices == [13]
    stored = store.list_runs(limit=1)[0]
    assert stored.config["options"]["sampling"]["row_ids"] == first.row_ids
    assert rows_of_run(store, stored.id, rows) == first.indices


def test_uncertain_from_a_column_or_a_clear_error(tmp_path: Path) -> None:
    rows = _rows(12, random.Random(6))
    with pytest.raises(InputValidationError, match="no active-learning signal"):
        choose_rows(rows, SampleRequest(n=3, strategy="uncertain"))
    for i, row in enumerate(rows):
        row["uncertainty"] = (i * 7) % 12 / 12
    sample = choose_rows(rows, SampleRequest(n=3, strategy="uncertain"))
    top = sorted(range(12), key=lambda i: -rows[i]["uncertainty"])[:3]
    assert sample.indices == sorted(top)


# --------------------------------------------------------------------------- seeds
@pytest.mark.parametrize("strategy", ["random", "diverse", "difficult", "uncertain"])
def test_every_strategy_is_reproducible_with_its_seed(strategy: str) -> None:
    rng = random.Random(8)
    rows = _rows(50, rng)
    for row in rows:
        row["uncertainty"] = rng.choice([0.1, 0.5, 0.9])  # ties: the seed orders them
    picks = []
    for seed in (1, 1, 2):
        req = SampleRequest(n=10, strategy=strategy, seed=seed, stratify_by="group")
        picks.append(choose_rows(rows, req).indices)
    assert picks[0] == picks[1]
    assert picks[0] != picks[2]


def test_row_ids() -> None:
    assert row_ids([{"id": "a"}, {"id": "b"}]) == ["a", "b"]
    assert row_ids([{"id": "a"}, {"id": "a"}]) == [0, 1]  # not distinct: positions
    assert row_ids([{"x": 1}, {"id": 2}]) == [0, 1]
