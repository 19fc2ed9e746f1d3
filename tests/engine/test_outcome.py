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


def _by_definition(names: list[str], rows: list[dict[str, Any]], summary: Summary) -> list[UnscoredMetric]:
    """unscored_metrics as its docstring defines it, every row read for every evaluator."""
    found = []
    for name in names:
        head = f"outputs.{name}."
        errors = [[(k, v) for k, v in row.items() if k.startswith(head) and k.endswith("_error") and v]
                  for row in rows]
        failed = sum(1 for e in errors if e)
        first = next((e[0] for e in errors if e), None)
        empty = [(k, e) for k, e in summary.items() if k.startswith(name + ".") and e.get("n") == 0]
        if not (empty or (rows and failed == len(rows))):
            continue
        error = None if first is None else str(first[1])
        score_key = None if first is None else first[0][len(head) : -len("_error")]
        n_failed = failed
        if empty:
            n_failed = int(empty[0][1].get("n_failed") or failed)
            score_key = empty[0][0][len(name) + 1 :]
        found.append(UnscoredMetric(name, n_failed, error, score_key or name))
    return found


class _Counted(list[dict[str, Any]]):
    read = 0

    def __iter__(self) -> Any:
        for row in super().__iter__():
            self.read += 1
            yield row


def test_unscored_equals_its_definition_and_reads_rows_only_as_far_as_needed() -> None:
    import random

    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(0, 6)
        names = ["a", "b", "c"]
        data = []
        for _ in range(n):
            row: dict[str, Any] = {"inputs.q": "x"}
            for name in names:
                if rng.random() < 0.5:
                    row[f"outputs.{name}.{name}_error"] = rng.choice(["boom", "", None, "bad reply"])
                else:
                    row[f"outputs.{name}.{name}"] = 1.0
            data.append(row)
        summary: Summary = {}
        for name in names:
            if rng.random() < 0.5:
                summary[f"{name}.{name}"] = {"n": rng.choice([0, 1]), "n_failed": rng.choice([0, n, None])}
        assert unscored_metrics(names, data, summary) == _by_definition(names, data, summary)
    counted = _Counted(rows(1000, failing=0))
    assert unscored_metrics(["f1_score", "groundedness"], counted, F1) == []
    assert counted.read == 1  # the first row already shows both metrics scored
