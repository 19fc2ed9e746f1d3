"""``StoredOutcome``: an Outcome kept as score lines (what worker processes send and the store keeps)
reads the same as the Outcome it was made from."""

from __future__ import annotations

import pickle

from touchstone.scores import ErrorInfo, Outcome, Score, Status, StoredOutcome
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
    stored = StoredOutcome(dict(original), score_lines(original.scores), original.failed, "division by zero")
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
    assert type(again) is StoredOutcome and again == stored and again.lines == stored.lines


def test_the_summary_of_lines_equals_the_summary_of_scores() -> None:
    from touchstone.evaluators.overlap import RougeScoreEvaluator

    ev = RougeScoreEvaluator("rougeL")
    outs = [ev.score_batch([{"response": f"a b {i}", "ground_truth": f"a {i % 3} c"}])[0] for i in range(40)]
    outs.append(ev.failure("no text"))
    stored: list[Outcome | None] = [StoredOutcome(dict(o), score_lines(o.scores), o.failed) for o in outs]
    plain: list[Outcome | None] = list(outs)
    infos = {"rouge": ev.info}
    assert summarize(infos, {"rouge": stored}) == summarize(infos, {"rouge": plain})
    # once the Scores were built (and could have been changed in place), they are what is read
    first = stored[0]
    assert isinstance(first, StoredOutcome)
    first.scores[0].value = 0.0
    assert summarize(infos, {"rouge": stored}) != summarize(infos, {"rouge": plain})
