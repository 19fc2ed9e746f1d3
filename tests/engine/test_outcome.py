"""engine.outcome: which metrics produced no score (from the summary's n = 0 entries or, when a
summary leaves them out, from the rows' errors), the table's placeholder entries, and the --min gate."""

from __future__ import annotations

from typing import Any

import pytest

from touchstone.engine.outcome import UnscoredMetric, gate_failures, unscored_metrics, with_unscored
from touchstone.errors import InputValidationError


def rows(n: int, *, failing: int) -> list[dict[str, Any]]:
    """``n`` rows scored by f1_score; groundedness failed on the first ``failing`` of them."""
    out = []
    for i in range(n):
        row: dict[str, Any] = {"inputs.query": f"q{i}", "outputs.f1_score.f1_score": 0.5}
        if i < failing:
            row["outputs.groundedness.groundedness_error"] = f"JudgeReplyError: no score in reply {i}"
            row["outputs.groundedness.groundedness_status"] = "failed"
        else:
            row["outputs.groundedness.groundedness"] = 4.0
        out.append(row)
    return out


Summary = dict[str, dict[str, Any]]
F1: Summary = {"f1_score.f1_score": {"mean": 0.5, "n": 3, "n_failed": 0}}


def test_unscored_from_rows_when_the_summary_leaves_the_metric_out() -> None:
    [found] = unscored_metrics(["f1_score", "groundedness"], rows(3, failing=3), F1)
    assert found == UnscoredMetric("groundedness", 3, "JudgeReplyError: no score in reply 0", "groundedness")
    assert found.describe() == (
        "metric groundedness produced no score (all 3 rows failed); "
        "first error: JudgeReplyError: no score in reply 0"
    )


def test_unscored_from_a_summary_entry_with_n_0() -> None:
    summary: Summary = {
        **F1, "groundedness.groundedness": {"mean": None, "n": 0, "n_failed": 3, "higher_is_better": True}
    }
    [found] = unscored_metrics(["f1_score", "groundedness"], rows(3, failing=3), summary)
    assert (found.evaluator, found.n_failed, found.score_key) == ("groundedness", 3, "groundedness")
    assert with_unscored(summary, [found], ["f1_score", "groundedness"]) == summary  # nothing to add


def test_a_metric_scored_on_some_rows_is_not_unscored() -> None:
    summary: Summary = {**F1, "groundedness.groundedness": {"mean": 4.0, "n": 1, "n_failed": 2}}
    assert unscored_metrics(["f1_score", "groundedness"], rows(3, failing=2), summary) == []


def test_with_unscored_adds_an_n_0_entry_in_evaluator_order() -> None:
    summary: Summary = {**F1, "coherence.coherence": {"mean": 3.0, "n": 3, "n_failed": 0}}
    unscored = [UnscoredMetric("groundedness", 3, "boom", "groundedness")]
    shown = with_unscored(summary, unscored, ["f1_score", "groundedness", "coherence"])
    assert list(shown) == ["f1_score.f1_score", "groundedness.groundedness", "coherence.coherence"]
    assert shown["groundedness.groundedness"]["n"] == 0 and shown["groundedness.groundedness"]["mean"] is None
    assert shown["groundedness.groundedness"]["n_failed"] == 3


def test_describe_keeps_one_short_line() -> None:
    line = UnscoredMetric("m", 1, "first line\nsecond line " + "x" * 1000, "m").describe(limit=50)
    assert "\n" not in line and line.endswith("…") and "all 1 row failed" in line
    assert UnscoredMetric("m", 2, None, "m").describe() == "metric m produced no score (all 2 rows failed)"


def test_gate_failures() -> None:
    summary: Summary = {**F1, "groundedness.groundedness": {"mean": None, "n": 0, "n_failed": 3}}
    assert gate_failures(summary, {"f1_score": 0.4}) == []
    assert gate_failures(summary, {"f1_score": 0.6}) == [
        "f1_score.f1_score mean 0.5000 is below the minimum 0.6"
    ]
    assert gate_failures(summary, {"groundedness": 1}) == [
        "groundedness.groundedness mean - is below the minimum 1"
    ]
    with pytest.raises(InputValidationError, match="no such metric"):
        gate_failures(summary, {"bleu": 0.1})
