"""``CompactOutcome``: an Outcome kept as score lines (what worker processes send, the store keeps and
ranking returns) reads the same as the Outcome it was made from."""

from __future__ import annotations

import pickle

from touchstone.scores import CompactOutcome, ErrorInfo, Outcome, Score, Status
from touchstone.stats.aggregate import summarize
from touchstone.store.base import score_lines


def _original() -> Outcome:
    scores = [
        Score("rouge", 0.5, passed=True, threshold=0.5),
        Score("rouge_recall", 1, label="all", passed=False),
        Score.failed("rouge_precision", ErrorInfo("computation", "division by zero")),
    ]
    return Outcome(scores, {"rouge": 0.5, "rouge_error": "division by zero"})


def test_stored_outcome_rebuilds_the_scores_and_their_failure() -> None:
    original = _original()
    stored = CompactOutcome(dict(original), score_lines(original.scores), original.failed, "division by zero")
    assert stored == original and stored.failed and stored.lines_current
    rebuilt = stored.scores
    assert not stored.lines_current
    assert [(s.name, s.value, s.label, s.passed, s.status) for s in rebuilt] == [
        ("rouge", 0.5, None, True, Status.OK),
        ("rouge_recall", 1.0, "all", False, Status.OK),
        ("rouge_precision", None, None, None, Status.FAILED),
    ]
    assert rebuilt[2].error == ErrorInfo("computation", "division by zero")
    again = pickle.loads(pickle.dumps(stored))
    assert type(again) is CompactOutcome and again == stored and again.lines == stored.lines


def test_the_summary_of_lines_equals_the_summary_of_scores() -> None:
    from touchstone.evaluators.text import RougeScoreEvaluator

    ev = RougeScoreEvaluator("rougeL")
    outs = [ev.score_batch([{"response": f"a b {i}", "ground_truth": f"a {i % 3} c"}])[0] for i in range(40)]
    outs.append(ev.failure("no text"))
    stored: list[Outcome | None] = [CompactOutcome(dict(o), score_lines(o.scores), o.failed) for o in outs]
    plain: list[Outcome | None] = list(outs)
    infos = {"rouge": ev.info}
    assert summarize(infos, {"rouge": stored}) == summarize(infos, {"rouge": plain})
    # once the Scores were built (and could have been changed in place), they are what is read
    first = stored[0]
    assert isinstance(first, CompactOutcome)
    first.scores[0].value = 0.0
    assert summarize(infos, {"rouge": stored}) != summarize(infos, {"rouge": plain})


def test_an_outcome_of_plain_values_makes_its_lines_and_scores_when_asked() -> None:
    out = CompactOutcome.of_values({"mrr": 0.5, "ndcg_at_10": 1, "map": 0.25}, "ndcg_at_10")
    assert dict(out) == {"mrr": 0.5, "ndcg_at_10": 1, "map": 0.25} and not out.failed
    assert out.lines == [
        ("ndcg_at_10", 1.0, None, "ok", None, None), ("mrr", 0.5, None, "ok", None, None),
        ("map", 0.25, None, "ok", None, None),
    ]
    assert [(s.name, s.value) for s in out.scores] == [("ndcg_at_10", 1), ("mrr", 0.5), ("map", 0.25)]
    assert out.main is not None and out.main.name == "ndcg_at_10"
