"""store.results: what the engine reads back of a run (a resume's stored results, a large run's rows,
the target's outputs, the corpus outputs), as typed records by page of rows."""

from __future__ import annotations

from pathlib import Path

from touchstone.scores import Status, score_line
from touchstone.store import ScoreRecord, StoredRow, open_store
from touchstone.store.results import FailedScore, ResultOutputs, RowInputs, SqlResultsRepository, TargetOutput


def _run(tmp_path: Path) -> tuple[SqlResultsRepository, str]:
    store = open_store(tmp_path / "runs.db")
    run = store.create_run({}, "repo", "0")
    store.put_rows(run, [
        StoredRow(0, "a.jsonl", 1, {"q": "zero"}, {"response": "r0"}, None),
        StoredRow(1, "a.jsonl", 2, {"q": "one"}, None, "ValueError: boom"),
        StoredRow(2, None, None, {"q": "two"}, None, None),
    ])
    store.put_scores(run, "m", [
        ScoreRecord(0, {"m": 0.5, "m_result": "pass"}, False, {"calls": 1},
                    [score_line("m", 0.5, None, "ok", None, 1)]),
        ScoreRecord(1, {"m_error": "bad"}, True, None,
                    [score_line("m", None, None, Status.FAILED.value, "judge_call", None)]),
    ])
    store.put_scores(run, "n", [ScoreRecord(2, {"n": 3}, False, None, [
        score_line("n_b", 1.0, "x", "ok", None, None), score_line("n_a", 2.0, None, "ok", None, 0),
    ])])
    assert isinstance(store.results, SqlResultsRepository)
    return store.results, run


def test_a_resume_reads_which_rows_stand(tmp_path: Path) -> None:
    results, run = _run(tmp_path)
    assert results.scored_rows(run, 0, 3) == {"m": [0, 1], "n": [2]}
    assert results.scored_rows(run, 1, 2) == {"m": [1]}
    assert results.failed_scores(run) == [FailedScore(1, "m", "judge_call")]
    assert results.score_lines(run, "n", 0, 3) == {2: [("n_a", 2.0, None, "ok", None, False),
                                                      ("n_b", 1.0, "x", "ok", None, None)]}
    assert results.score_lines(run, "m", 1, 3) == {1: [("m", None, None, "failed", "judge_call", None)]}


def test_results_and_outputs_come_back_decoded(tmp_path: Path) -> None:
    results, run = _run(tmp_path)
    got = sorted(results.results(run, 0, 3))
    assert [(r.idx, r.evaluator, r.outputs, r.usage) for r in got] == [
        (0, "m", {"m": 0.5, "m_result": "pass"}, {"calls": 1}),
        (1, "m", {"m_error": "bad"}, None),
        (2, "n", {"n": 3}, None),
    ]
    assert results.outputs_by_result(run, 1, 3) == {
        (1, "m"): ResultOutputs({"m_error": "bad"}, True), (2, "n"): ResultOutputs({"n": 3}, False)}
    assert [(o.idx, o.outputs, o.failed) for o in results.evaluator_outputs(run, "m", 0, 3)] == [
        (0, {"m": 0.5, "m_result": "pass"}, False), (1, {"m_error": "bad"}, True)]


def test_rows_and_target_outputs(tmp_path: Path) -> None:
    results, run = _run(tmp_path)
    assert results.row_inputs(run, 0, 2) == {
        0: RowInputs("a.jsonl", {"q": "zero"}, {"response": "r0"}, None),
        1: RowInputs("a.jsonl", {"q": "one"}, None, "ValueError: boom"),
    }
    assert results.row_inputs(run, 2, 3, with_data=False) == {2: RowInputs(None, None, None, None)}
    assert results.target_outputs(run, 0, 3) == [
        TargetOutput(0, {"response": "r0"}, None), TargetOutput(1, None, "ValueError: boom"),
        TargetOutput(2, None, None)]
    assert results.target_outputs(run, 0, 3, answered_only=True) == [
        TargetOutput(0, {"response": "r0"}, None), TargetOutput(1, None, "ValueError: boom")]
    assert results.stored_row_indices(run, 1, 10) == [1, 2]
    assert results.stored_row_indices(run, 5, 10) == []
