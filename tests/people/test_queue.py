"""The active-learning queue ranks planted uncertain, disputed and failed items first."""

from __future__ import annotations

import math
import random

import pytest
from scipy.stats import entropy
from tests.people.conftest import make_run

from touchstone.errors import InputValidationError
from touchstone.people import feedback as fb
from touchstone.people import queue as q
from touchstone.store.base import Store


def test_entropy_uncertainty_is_the_normalised_shannon_entropy() -> None:
    rng = random.Random(7)
    for _ in range(200):
        k = rng.randint(2, 7)
        p = [rng.random() ** 3 for _ in range(k)]
        probs = {str(i + 1): v for i, v in enumerate(p)}
        assert q.entropy_uncertainty(probs) == pytest.approx(entropy(p) / math.log(k))
    assert q.entropy_uncertainty({"1": 0.2, "2": 0.2, "3": 0.2, "4": 0.2, "5": 0.2}) == pytest.approx(1.0)
    assert q.entropy_uncertainty({"5": 1.0}, points=5) == 0.0
    assert q.entropy_uncertainty({}, points=5) == 0.0


def test_threshold_uncertainty_is_one_on_the_threshold_and_zero_at_the_far_end() -> None:
    assert q.threshold_uncertainty(q.JudgeSignal(3, threshold=3)) == 1.0
    assert q.threshold_uncertainty(q.JudgeSignal(1, threshold=3)) == 0.0
    assert q.threshold_uncertainty(q.JudgeSignal(4, threshold=3)) == pytest.approx(0.5)
    assert q.threshold_uncertainty(q.JudgeSignal(0.7, threshold=0.5, low=0, high=1)) == pytest.approx(0.6)
    assert q.threshold_uncertainty(q.JudgeSignal(3)) == 0.0


def _planted(n: int = 60) -> tuple[list[q.Signals], set[int], set[int], set[int]]:
    """Confident judges agreeing with silent users everywhere, except planted rows."""
    rng = random.Random(11)
    confident = {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.02, "5": 0.98}
    uncertain, disputed, failed = {5, 17, 40}, {9, 33}, {22, 51}
    items = []
    for i in range(n):
        value = rng.choice([4.9, 5.0, 1.0, 1.1])  # far from the threshold 3
        a = q.JudgeSignal(value, 3, probabilities=confident, group="coherence")
        b = q.JudgeSignal(value, 3, group="coherence")
        feedback: dict[str, object] = {}
        if i in uncertain:
            a = q.JudgeSignal(3.0, 3, probabilities={"2": 0.3, "3": 0.35, "4": 0.35}, group="coherence")
            b = q.JudgeSignal(3.2, 3, group="coherence")
        if i in disputed:
            a, b = q.JudgeSignal(5.0, 3, group="coherence"), q.JudgeSignal(1.0, 3, group="coherence")
        if i in failed:
            feedback = {"thumbs_down": 1, "user_failure": True}
            a, b = q.JudgeSignal(5.0, 3, group="coherence"), q.JudgeSignal(5.0, 3, group="coherence")
        items.append(q.Signals("run", i, {"judge1.coherence": a, "judge2.coherence": b}, feedback))
    rng.shuffle(items)
    return items, uncertain, disputed, failed


def test_planted_items_come_first_within_the_budget() -> None:
    items, uncertain, disputed, failed = _planted()
    planted = uncertain | disputed | failed
    ranked = q.rank(items, budget=len(planted))
    assert {r.idx for r in ranked} == planted
    top_failed = q.rank(items, budget=2)
    # a failure the judge called perfect: reported and disputed at once, the strongest signal
    assert {r.idx for r in top_failed} == failed
    assert all("a user reported a failure" in r.reasons for r in top_failed)
    by_idx = {r.idx: r for r in q.rank(items)}
    assert all(by_idx[i].uncertainty >= 0.9 for i in uncertain)
    assert all(by_idx[i].disagreement == 1.0 for i in disputed)
    assert all(by_idx[i].priority < 0.2 for i in by_idx if i not in planted)
    assert q.rank(items, budget=0) == []
    with pytest.raises(InputValidationError):
        q.rank(items, budget=-1)


def test_weights_choose_what_counts() -> None:
    items, uncertain, _, _ = _planted()
    only_uncertainty = q.rank(items, budget=3, weights=q.Weights(1.0, 0.0, 0.0))
    assert {r.idx for r in only_uncertainty} == uncertain


def test_judge_against_users_counts_as_disagreement() -> None:
    judge = {"coherence": q.JudgeSignal(5.0, 3)}
    happy = q.Signals("r", 0, judge, {"thumbs_up": 2})
    unhappy = q.Signals("r", 1, judge, {"rating": 1.0})
    ranked = q.rank([happy, unhappy])
    assert ranked[0].idx == 1 and ranked[0].disagreement == 1.0
    assert any("users disagree" in r for r in ranked[0].reasons)
    assert q.user_signal({"thumbs_up": 1, "thumbs_down": 3}) == 0.25
    assert q.user_signal({}) is None


def test_queue_from_a_stored_run_with_logprob_distributions_and_feedback(sqlite_store: Store) -> None:
    sure = {"score_mode": "logprobs",
            "score_probabilities": {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.01, "5": 0.99}}
    torn = {"score_mode": "logprobs", "score_probabilities": {str(k): 0.2 for k in range(1, 6)}}
    rows = [{"id": f"q{i}", "query": f"q{i}", "response": f"a{i}"} for i in range(8)]
    values = [(4.99, {"coherence_threshold": 3, "coherence_properties": sure}) for _ in range(8)]
    values[6] = (3.0, {"coherence_threshold": 3, "coherence_properties": torn})
    run = make_run(sqlite_store, "prod", rows, {"coherence": values})
    fb.record_feedback(sqlite_store, [{"interaction_id": "q2", "kind": "error_report", "text": "it lied"}])
    ranked = q.build_queue(sqlite_store, run, budget=2)
    assert [r.idx for r in ranked] == [2, 6]
    assert ranked[1].uncertainty == pytest.approx(1.0)
    assert "entropy" in ranked[1].reasons[0]
