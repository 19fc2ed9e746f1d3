"""The dashboard's read models (``store.dashboard``) on both backends: a small run written through
the Store protocol, read back by each typed method, every answer checked against the values
written (selection, order, paging, counts, histograms, feedback)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from touchstone.errors import InputValidationError
from touchstone.people.feedback import record_feedback
from touchstone.scores import score_line
from touchstone.store import ScoreRecord, Store, StoredRow, open_store
from touchstone.store.dashboard import (
    DashboardReads,
    EvaluatorResult,
    LabelCount,
    MetricRef,
    MetricScore,
    RowFilter,
    RowRecord,
    RunSelection,
)
from touchstone.store.dashboard_filters import json_text, like_pattern

F1 = MetricRef("f1", "f1_score")
COHERENCE = MetricRef("judge", "coherence")
VERDICT = MetricRef("judge", "verdict")
F1_VALUES = [0.0, 0.25, 0.5, 0.75, 1.0, None]  # row 5: a failed score
COHERENCE_VALUES = [1, 2, 3, 4, 5, 3]


@dataclass(frozen=True)
class Written:
    store: Store
    alpha: str
    beta: str


def _data(i: int) -> dict[str, Any]:
    data: dict[str, Any] = {"id": f"q{i}", "topic": "colours" if i % 2 else "numbers", "text": f"row {i}"}
    if i == 2:
        data["text"] = 'she said "hi" with 100% certainty'
    if i == 4:
        data["extra"] = math.nan  # written as NaN, which neither database's JSON functions read
    return data


def _write(store: Store) -> Written:
    config = {"evaluators": {"f1": {"metric": "f1_score"}, "judge": {"metric": "coherence"}}, "n_rows": 6}
    alpha = store.create_run(config, "Alpha run", "test")
    store.put_rows(alpha, [
        StoredRow(i, "d.jsonl", i + 1, _data(i), {"response": f"answer {i}"},
                  "boom" if i == 3 else None)
        for i in range(6)
    ])
    f1_items = []
    for i, v in enumerate(F1_VALUES):
        line = score_line("f1_score", v, None, "ok" if v is not None else "failed",
                None if v is not None else "judge_reply", None if v is None else int(v >= 0.5))
        f1_items.append(ScoreRecord(i, {"f1_score": v}, v is None, {"calls": 0}, (line,)))
    store.put_scores(alpha, "f1", f1_items)
    judge_items = []
    for i, v in enumerate(COHERENCE_VALUES):
        lines = (score_line("coherence", float(v), None, "ok", None, int(v >= 3)),
                 score_line("verdict", None, "yes" if i < 4 else "no", "ok", None, None))
        outputs = {"coherence": v, "coherence_reason": f"reason {i}"}
        judge_items.append(ScoreRecord(i, outputs, False, None, lines))
    store.put_scores(alpha, "judge", judge_items)
    summary = {"summary": {"f1.f1_score": {"mean": 0.5, "n": 5}, "judge.coherence": {"mean": 3.0, "n": 6}}}
    store.finish_run(alpha, "completed", {}, summary)
    beta = store.create_run({"evaluators": {}}, "beta", "test")
    store.set_status(beta, "failed")
    record_feedback(store, [
        {"interaction_id": "q1", "kind": "thumbs_down"},
        {"interaction_id": "q4", "kind": "rating", "value": 1},
        {"interaction_id": "q0", "kind": "thumbs_up"},
    ])
    return Written(store, alpha, beta)


@pytest.fixture
def written(store_location: str) -> Iterator[Written]:
    store = open_store(store_location)
    try:
        yield _write(store)
    finally:
        store.close()


def test_runs_are_selected_ordered_and_paged(written: Written) -> None:
    reads = written.store.dashboard
    both = reads.runs(RunSelection())
    assert [(r.started, r.id) for r in both] == sorted(((r.started, r.id) for r in both), reverse=True)
    assert {r.id for r in both} == {written.alpha, written.beta}
    assert reads.count_runs(RunSelection()) == 2
    assert [r.id for r in reads.runs(RunSelection(name="ALPHA"))] == [written.alpha]
    assert reads.runs(RunSelection(name="%")) == []  # a literal percent sign
    assert [r.id for r in reads.runs(RunSelection(status="failed"))] == [written.beta]
    assert [r.id for r in reads.runs(RunSelection(metric="coherence"))] == [written.alpha]
    assert reads.count_runs(RunSelection(metric="rouge")) == 0
    day = both[0].started[:10]
    assert reads.count_runs(RunSelection(since=day)) == 2
    assert reads.count_runs(RunSelection(before="2000-01-01")) == 0
    assert [r.id for r in reads.runs(RunSelection(), 1, 1)] == [both[1].id]
    assert len(reads.runs(RunSelection(), 1)) == 1
    assert reads.run_statuses() == {"completed", "failed"}


def test_one_run_reads_back_as_written(written: Written) -> None:
    reads = written.store.dashboard
    assert isinstance(reads, DashboardReads)
    info = reads.run(written.alpha)
    assert info is not None
    assert info.name == "Alpha run" and info.status == "completed" and info.config["n_rows"] == 6
    assert info.summary == {"summary": {"f1.f1_score": {"mean": 0.5, "n": 5},
                                        "judge.coherence": {"mean": 3.0, "n": 6}}}
    assert reads.run("no such run") is None
    assert reads.scored_metrics(written.alpha) == [F1, COHERENCE, VERDICT]
    assert reads.scored_metrics(written.beta) == []


def _page(w: Written, f: RowFilter, metric: MetricRef | None = None, limit: int = 50,
          offset: int = 0) -> tuple[list[int], int]:
    got = w.store.dashboard.row_indices(w.alpha, f, metric, limit, offset)
    return got.indices, got.total


def test_row_pages_and_their_totals(written: Written) -> None:
    assert _page(written, RowFilter(), limit=4) == ([0, 1, 2, 3], 6)
    assert _page(written, RowFilter(), limit=4, offset=4) == ([4, 5], 6)
    assert _page(written, RowFilter(), limit=4, offset=10) == ([], 6)
    # a filtered page past the end still counts the selection
    assert _page(written, RowFilter(q="row"), limit=2, offset=10) == ([], 5)


@pytest.mark.parametrize(("f", "metric", "expected"), [
    (RowFilter(q='said "HI"'), None, [2]),
    (RowFilter(q="100%"), None, [2]),
    (RowFilter(q="_"), None, []),  # a LIKE wildcard taken literally
    (RowFilter(q="boom"), None, [3]),  # the target's error
    (RowFilter(q="answer 5"), None, [5]),  # the target's outputs
    (RowFilter(metric="f1.f1_score", min=0.5), F1, [2, 3, 4]),
    (RowFilter(metric="f1.f1_score", min=0.2, max=0.8), F1, [1, 2, 3]),
    (RowFilter(metric="f1.f1_score", passed="yes"), F1, [2, 3, 4]),
    (RowFilter(metric="f1.f1_score", passed="no"), F1, [0, 1]),
    (RowFilter(metric="f1.f1_score", status="failed"), F1, [5]),
    (RowFilter(metric="f1.f1_score", sort="-value"), F1, [4, 3, 2, 1, 0, 5]),
    (RowFilter(metric="f1.f1_score", sort="value"), F1, [0, 1, 2, 3, 4, 5]),
    (RowFilter(metric="judge.coherence", sort="-value"), COHERENCE, [4, 3, 2, 5, 1, 0]),
    (RowFilter(status="failed"), None, [3, 5]),  # a target error, or any failed score
    (RowFilter(status="ok"), None, [0, 1, 2, 4]),
    (RowFilter(column="topic", value="COL"), None, [1, 3, 5]),
    (RowFilter(column="topic", value="num"), None, [0, 2, 4]),  # row 4 holds a NaN
    (RowFilter(column="no such column", value=""), None, []),
    (RowFilter(feedback="thumbs_down"), None, [1]),
    (RowFilter(feedback="failure"), None, [1, 4]),  # a thumbs down, a rating of 1
    (RowFilter(feedback="any"), None, [0, 1, 4]),
    (RowFilter(feedback="none"), None, [2, 3, 5]),
    (RowFilter(rating_max=2), None, [4]),
], ids=repr)
def test_row_filters_select_the_written_rows(
    written: Written, f: RowFilter, metric: MetricRef | None, expected: list[int]
) -> None:
    assert _page(written, f, metric) == (expected, len(expected))
    if len(expected) > 1:  # a page of one: the order and the total hold across pages
        assert _page(written, f, metric, limit=1, offset=1) == (expected[1:2], len(expected))


def test_rows_and_their_results(written: Written) -> None:
    reads = written.store.dashboard
    found = reads.rows(written.alpha, [3, 1, 99])
    assert sorted(found) == [1, 3]
    assert found[3] == RowRecord(3, "d.jsonl", 4, _data(3), {"response": "answer 3"}, "boom")
    assert reads.rows(written.alpha, []) == {}
    assert reads.row(written.alpha, 2) == RowRecord(2, "d.jsonl", 3, _data(2), {"response": "answer 2"}, None)
    assert reads.row(written.alpha, 99) is None
    assert reads.first_inputs(written.alpha) == _data(0)
    assert reads.first_inputs(written.beta) is None
    assert reads.evaluator_results(written.alpha, 5) == [
        EvaluatorResult("f1", {"f1_score": None}, True, {"calls": 0}),
        EvaluatorResult("judge", {"coherence": 3, "coherence_reason": "reason 5"}, False, None),
    ]


def test_score_lines_of_some_rows(written: Written) -> None:
    reads = written.store.dashboard
    assert reads.metric_scores(written.alpha, [1, 0]) == [
        MetricScore(0, "f1", "f1_score", 0.0, None, "ok", None, False),
        MetricScore(1, "f1", "f1_score", 0.25, None, "ok", None, False),
        MetricScore(0, "judge", "coherence", 1.0, None, "ok", None, False),
        MetricScore(0, "judge", "verdict", None, "yes", "ok", None, None),
        MetricScore(1, "judge", "coherence", 2.0, None, "ok", None, False),
        MetricScore(1, "judge", "verdict", None, "yes", "ok", None, None),
    ]
    assert reads.metric_scores(written.alpha, [5], ["f1"]) == [
        MetricScore(5, "f1", "f1_score", None, None, "failed", "judge_reply", None)]
    assert reads.metric_scores(written.alpha, [5], []) == []
    assert reads.metric_scores(written.alpha, []) == []


def test_a_metric_range_counts_and_bins(written: Written) -> None:
    reads = written.store.dashboard
    f1 = reads.metric_stats(written.alpha, F1)
    assert (f1.lo, f1.hi, f1.n, f1.n_failed, f1.fractional) == (0.0, 1.0, 5, 1, 3)
    assert f1.failures == {"judge_reply": 1}
    coherence = reads.metric_stats(written.alpha, COHERENCE)
    assert (coherence.lo, coherence.hi, coherence.n) == (1, 5, 6)
    assert (coherence.n_failed, coherence.fractional) == (0, 0)
    assert coherence.failures == {}
    assert reads.value_counts(written.alpha, COHERENCE) == {1.0: 1, 2.0: 1, 3.0: 2, 4.0: 1, 5.0: 1}
    assert reads.count_values(written.alpha, F1) == 5
    assert reads.count_values(written.alpha, VERDICT) == 0
    # bins of width 0.25 from 0 to 1: the highest value joins the last bin
    assert reads.bin_counts(written.alpha, F1, 0.0, 1.0, 4) == [1, 1, 1, 2]
    assert reads.bin_counts(written.alpha, COHERENCE, 1.0, 5.0, 2) == [2, 4]
    assert reads.label_counts(written.alpha, VERDICT) == [LabelCount("yes", 4), LabelCount("no", 2)]
    assert reads.label_counts(written.alpha, VERDICT, 1) == [LabelCount("yes", 4)]
    empty = reads.metric_stats(written.alpha, MetricRef("f1", "nothing"))
    assert (empty.lo, empty.hi, empty.n, empty.n_failed, empty.failures) == (None, None, 0, 0, {})


def test_rows_with_feedback(written: Written) -> None:
    reads = written.store.dashboard
    assert reads.rows_with_feedback(written.alpha, "failure") == {1, 4}
    assert reads.rows_with_feedback(written.alpha, "thumbs_up") == {0}
    assert reads.rows_with_feedback(written.alpha, "", 1.5) == {4}
    assert reads.rows_with_feedback(written.alpha, "any", 0.5) == set()
    assert reads.rows_with_feedback(written.alpha) == {0, 1, 2, 3, 4, 5}
    with pytest.raises(InputValidationError, match="feedback must be one of"):
        reads.rows_with_feedback(written.alpha, "thumbs_sideways")


def test_like_patterns_and_json_text() -> None:
    assert like_pattern("a%b_c\\") == "%a\\%b\\_c\\\\%"
    assert json_text('say "hi"\n') == 'say \\"hi\\"\\n'
