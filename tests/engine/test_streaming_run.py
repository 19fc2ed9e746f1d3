"""Streaming runs: a large file read in batches, figures gathered as results arrive, rows read back
from the store. Checked against a computation that holds everything (the engine's functions over
the whole run: ``sdk_rows``, ``sdk_metrics``, ``summarize``, ``corpus_metrics``)."""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from touchstone import BleuScoreEvaluator, ExactMatchEvaluator, F1ScoreEvaluator, evaluate
from touchstone.data import streaming
from touchstone.data.loaders import load_records
from touchstone.engine import runner
from touchstone.engine.result import own_aggregators
from touchstone.engine.sdk_frame.columns import sdk_rows
from touchstone.engine.sdk_frame.metrics import sdk_metrics
from touchstone.engine.sdk_frame.values import sdk_input
from touchstone.engine.stored_rows import StoredRows
from touchstone.errors import InputValidationError
from touchstone.evaluators.base import EvaluatorLike
from touchstone.evaluators.custom import as_sdk_evaluator
from touchstone.stats.aggregate import summarize
from touchstone.store import open_store

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "blue", "sky", "red", "fox"]


def odd(response: str, ground_truth: str) -> dict[str, Any]:
    """A user's metric whose outputs vary from row to row: gaps, ints and floats, booleans, labels,
    pass/fail, a safety-like severity, per-turn dicts, failures."""
    n = len(response) + len(ground_truth)
    if n % 17 == 0:
        raise ValueError(f"no score for length {n}")
    out: dict[str, Any] = {"odd_score": n % 5 if n % 3 else None, "odd_flag": n % 2 == 0,
                           "odd_result": "pass" if n % 2 else "fail", "odd_ratio": n / 7 if n % 4 else n}
    if n % 7 == 0:
        out["evaluation_per_turn"] = {"a": [1, 2], "b": {"c": n}}
    if n % 11 == 0:
        out["violence_score"] = n % 8
    if n % 13 == 0:
        out["protected_material_label"] = bool(n % 2)
        out["protected_material_details"] = {"x": n % 3 == 0, "y": "true"}
    if n % 5 == 0:
        out["odd_text"] = "t" * (n % 3)
    return out


def write_rows(path: Path, n: int, seed: int = 1) -> None:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            truth = " ".join(rng.choices(WORDS, k=rng.randint(1, 9)))
            response = truth if rng.random() < 0.25 else " ".join(rng.choices(WORDS, k=rng.randint(1, 9)))
            row: dict[str, Any] = {"response": response, "ground_truth": truth}
            if i % 9 == 0:
                row["meta"] = {"k": i, "deep": {"x": "y"}} if i % 2 else {"k": str(i)}
            if i % 10 == 3:
                row["note"] = i
            fh.write(json.dumps(row) + "\n")


@pytest.fixture()
def streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every file is streamed and every run's rows are read back from the store."""
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(runner, "ROWS_IN_MEMORY", 0)


def text(value: Any) -> str:
    """JSON text (NaN as NaN): equal texts for equal values, NaN included."""
    return json.dumps(value, sort_keys=True, default=str)


def reference(path: Path, evaluators: Mapping[str, EvaluatorLike]) -> dict[str, Any]:
    """Rows, metrics and summary of ``evaluators`` on the file computed as before streaming: every
    record and Outcome held, then the engine's functions over the whole run."""
    evs = {name: as_sdk_evaluator(ev, name) for name, ev in evaluators.items()}
    records = load_records(path)
    inputs = [{"response": r.data["response"], "ground_truth": r.data["ground_truth"]} for r in records]
    per_eval: dict[str, list[Any]] = {name: ev.score_batch(inputs) for name, ev in evs.items()}
    rows, columns = sdk_rows(
        [sdk_input(r.data, r.source) for r in records], per_eval,
        {name: [o is None or o.failed for o in outs] for name, outs in per_eval.items()},
    )
    corpus = {}
    for name, ev in evs.items():
        ok = [i for i, o in enumerate(per_eval[name]) if o is not None and not o.failed]
        figures = ev.corpus_metrics([{"response": records[i].data["response"],
                                      "ground_truth": records[i].data["ground_truth"]} for i in ok],
                                    [per_eval[name][i] for i in ok])
        if figures:
            corpus[name] = figures
    metrics = sdk_metrics(columns, own_aggregators(evs))
    for name, figures in corpus.items():
        metrics.update({f"{name}.{k}": v for k, v in figures.items()})
    summary = summarize({n: ev.info for n, ev in evs.items()}, per_eval, corpus,
                        {n: ev.aggregator_options() for n, ev in evs.items()})
    n_failed = sum(1 for row in rows for k, v in row.items()
                   if k.endswith("_error") and v and isinstance(v, str))
    return {"rows": rows, "metrics": metrics, "summary": summary, "n_failed": n_failed}


def test_streamed_run_equals_the_whole_computation(tmp_path: Path, streamed: None) -> None:
    data = tmp_path / "rows.jsonl"
    write_rows(data, 20_000)
    evs: dict[str, EvaluatorLike] = {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator(), "odd": odd}
    store = str(tmp_path / "runs.db")
    result = evaluate(data=data, evaluators=evs, store=store, workers=1)
    assert isinstance(result.rows, StoredRows)
    ref = reference(data, evs)
    assert text(result.metrics) == text(ref["metrics"])
    assert list(result.metrics) == list(ref["metrics"])  # the SDK's order of keys too
    assert text(result.summary) == text(ref["summary"])
    assert list(result.summary) == list(ref["summary"])
    assert result.n_failed == ref["n_failed"] > 0
    assert len(result.rows) == 20_000
    assert [text(r) for r in result.rows] == [text(r) for r in ref["rows"]]
    assert [list(r) for r in result.rows[:50]] == [list(r) for r in ref["rows"][:50]]  # key order
    assert text(result.rows[-1]) == text(ref["rows"][-1])
    assert text(result.rows[2001]) == text(ref["rows"][2001])
    assert text(result.rows[5:9000:997]) == text(ref["rows"][5:9000:997])
    assert result.run["status"] == "completed_with_failures"


def test_streamed_rows_behave_as_the_list(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tmp_path / "rows.jsonl"
    write_rows(data, 1500, seed=2)
    evs: dict[str, EvaluatorLike] = {"f1": F1ScoreEvaluator(), "bleu": BleuScoreEvaluator(), "odd": odd}
    listed = evaluate(data=data, evaluators=evs, store=str(tmp_path / "a.db"), output_path=tmp_path / "a")
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    monkeypatch.setattr(runner, "ROWS_IN_MEMORY", 0)
    streamed = evaluate(data=data, evaluators=evs, store=str(tmp_path / "b.db"), output_path=tmp_path / "b")
    assert isinstance(listed.rows, list) and isinstance(streamed.rows, StoredRows)
    assert "bleu.corpus_bleu" in streamed.metrics
    assert text(streamed.metrics) == text(listed.metrics)
    assert text(streamed.summary) == text(listed.summary)
    assert streamed.n_failed == listed.n_failed
    for name in ("evaluation_results.json", "rows.jsonl"):
        assert (tmp_path / "b" / name).read_text() == (tmp_path / "a" / name).read_text()
    rows = streamed.rows
    assert len(rows) == 1500 and rows[-1] == rows[1499] and rows[0] is not None
    with pytest.raises(IndexError):
        rows[1500]
    frame = streamed.to_pandas()
    assert frame.shape == listed.to_pandas().shape
    # ``==`` with the list, value for value (the gaps are the same NaN object on both sides)
    assert rows == listed.rows and listed.rows == rows and rows == rows[:]
    assert rows != listed.rows[:-1]


def test_corpus_bleu_streamed_equals_summed_over_held_rows(tmp_path: Path, streamed: None) -> None:
    data = tmp_path / "rows.jsonl"
    write_rows(data, 2500, seed=3)
    evs = {"bleu": BleuScoreEvaluator(), "sacre": BleuScoreEvaluator(implementation="sacrebleu")}
    store = str(tmp_path / "runs.db")
    result = evaluate(data=data, evaluators=evs, store=store, workers=1)
    ref = reference(data, evs)
    assert result.metrics["bleu.corpus_bleu"] == ref["metrics"]["bleu.corpus_bleu"]
    assert result.metrics["sacre.corpus_bleu"] == ref["metrics"]["sacre.corpus_bleu"]
    assert text(result.summary) == text(ref["summary"])


def test_pool_workers_on_streamed_batches_give_the_same_results(
    tmp_path: Path, streamed: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "PARALLEL_MIN_ROWS", 1000)
    monkeypatch.setattr(streaming, "BATCH_ROWS", 1500)  # batches and chunks that end at different rows
    monkeypatch.setattr(runner, "BATCH_ROWS", 400)
    data = tmp_path / "rows.jsonl"
    write_rows(data, 6000, seed=4)
    evs = {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator()}
    inline = evaluate(data=data, evaluators=evs, store=str(tmp_path / "a.db"), workers=1)
    pooled = evaluate(data=data, evaluators=evs, store=str(tmp_path / "b.db"), workers=2)
    assert text(pooled.metrics) == text(inline.metrics)
    assert text(pooled.summary) == text(inline.summary)
    assert [text(r) for r in pooled.rows] == [text(r) for r in inline.rows]


STOP_AT = {"row": -1}


def stops(response: str, ground_truth: str) -> dict[str, float]:
    """A metric that stops the run (as Ctrl-C does) once it reaches a given response."""
    if response == "STOP" and STOP_AT["row"] >= 0:
        raise KeyboardInterrupt
    return {"stops": float(len(response) % 3)}


def test_streamed_run_resumes_after_an_interruption(tmp_path: Path, streamed: None) -> None:
    data = tmp_path / "rows.jsonl"
    write_rows(data, 4000, seed=5)
    lines = data.read_text().splitlines()
    lines[3100] = json.dumps({"response": "STOP", "ground_truth": "x"})
    data.write_text("\n".join(lines) + "\n")
    evs: dict[str, EvaluatorLike] = {"f1": F1ScoreEvaluator(), "stops": stops}
    store = str(tmp_path / "runs.db")
    STOP_AT["row"] = 3100
    try:
        with pytest.raises(KeyboardInterrupt) as stopped:
            evaluate(data=data, evaluators=evs, store=store, workers=1)
    finally:
        STOP_AT["row"] = -1
    run_id = stopped.value.run_id  # type: ignore[attr-defined]
    kept = open_store(store).count_scores(run_id)
    assert 3000 < kept < 8000  # what was scored before the stop is in the store
    resumed = evaluate(data=data, evaluators=evs, store=store, resume=run_id, workers=1)
    fresh = evaluate(data=data, evaluators=evs, store=str(tmp_path / "fresh.db"), workers=1)
    assert resumed.run["status"] == fresh.run["status"] == "completed"
    assert text(resumed.metrics) == text(fresh.metrics)
    assert text(resumed.summary) == text(fresh.summary)
    assert [text(r) for r in resumed.rows] == [text(r) for r in fresh.rows]


def test_streamed_validation_reports_as_the_whole_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "rows.jsonl"
    write_rows(data, 1000, seed=6)
    lines = data.read_text().splitlines()
    for i in (5, 480, 999):
        lines[i] = json.dumps({"response": 3})
    lines[700] = json.dumps({"answer": "x", "ground_truth": "y"})
    data.write_text("\n".join(lines) + "\n")
    evs = {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator()}
    with pytest.raises(InputValidationError) as whole:
        evaluate(data=data, evaluators=evs, store=str(tmp_path / "a.db"))
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    with pytest.raises(InputValidationError) as streamed:
        evaluate(data=data, evaluators=evs, store=str(tmp_path / "b.db"))
    assert str(streamed.value) == str(whole.value)
    assert streamed.value.problems == whole.value.problems
    assert streamed.value.category == whole.value.category
    lines[300] = "{not json"
    data.write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 1 << 40)
    with pytest.raises(InputValidationError) as whole_read:
        evaluate(data=data, evaluators=evs, store=str(tmp_path / "a.db"))
    monkeypatch.setattr(streaming, "STREAM_MIN_BYTES", 0)
    with pytest.raises(InputValidationError) as streamed_read:
        evaluate(data=data, evaluators=evs, store=str(tmp_path / "b.db"))
    assert streamed_read.value.problems == whole_read.value.problems
    # the line that is not JSON comes first, and hides nothing else: the other rows' problems follow
    problems = whole_read.value.problems
    assert problems[0].line == 301 and "invalid JSON" in problems[0].message
    found = {(p.line, p.field) for p in problems[1:]}
    assert found >= {(6, "response"), (481, "response"), (1000, "response")}
    assert not (tmp_path / "b.db").exists() or not open_store(str(tmp_path / "b.db")).list_runs()
