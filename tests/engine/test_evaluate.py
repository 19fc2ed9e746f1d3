"""evaluate(): the compatible SDK's result shape, loaders, mapping, targets, summary, output files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from touchstone import (
    EvaluationFailedError,
    Evaluator,
    ExactMatchEvaluator,
    F1ScoreEvaluator,
    InputSpec,
    evaluate,
)
from touchstone.errors import InputValidationError

GOLDEN = Path(__file__).parent.parent / "golden" / "azure_f1_evaluate.json"
ROWS = [
    {"response": "the cat sat", "ground_truth": "a cat sat", "extra": 1},
    {"response": "dog", "ground_truth": "cat", "extra": 2},
]


def test_shape_matches_the_compatible_sdk_key_for_key(tmp_path: Path) -> None:
    expected = json.loads(GOLDEN.read_text())
    result = evaluate(data=ROWS, evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "s.db")
    assert result["rows"] == expected["rows"]
    assert result["metrics"] == expected["metrics"]
    assert set(result) == set(expected)
    assert list(result["rows"][0]) == list(expected["rows"][0])  # same key order


def test_output_path_json_is_the_sdk_file(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    evaluate(data=ROWS, evaluators={"f1": F1ScoreEvaluator()}, output_path=out, store=tmp_path / "s.db")
    assert json.loads(out.read_text()) == json.loads(GOLDEN.read_text())


def test_all_loaders_agree(tmp_path: Path) -> None:
    rows = [
        {"query": "q1", "response": "the Trailglow 300", "ground_truth": ["Trailglow 300", "x"]},
        {"query": "q2", "response": "five days", "ground_truth": ["5 to 7 days"]},
    ]
    jsonl = tmp_path / "d.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    csv = tmp_path / "d.csv"
    pd.DataFrame(
        [
            {
                **r,
                "ground_truth": json.dumps(r["ground_truth"])
                if isinstance(r["ground_truth"], list)
                else r["ground_truth"],
            }
            for r in rows
        ]
    ).to_csv(csv, index=False)
    parquet = tmp_path / "d.parquet"
    pd.DataFrame(rows).to_parquet(parquet)
    results = [
        evaluate(data=src, evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "s.db")
        for src in (jsonl, str(csv), parquet, pd.DataFrame(rows), rows)
    ]
    scores = [[r["outputs.f1.f1_score"] for r in res["rows"]] for res in results]
    assert scores[0] == pytest.approx([1.0, 1 / 3])
    assert all(s == scores[0] for s in scores)


def test_aliases_question_and_answer(tmp_path: Path) -> None:
    res = evaluate(
        data=[{"question": "q", "answer": "cat", "ground_truth": "cat"}],
        evaluators={"f1": F1ScoreEvaluator()},
        store=tmp_path / "s.db",
    )
    assert res["rows"][0]["outputs.f1.f1_score"] == 1.0
    assert res["rows"][0]["inputs.answer"] == "cat"


def test_column_mapping_per_evaluator_and_default(tmp_path: Path) -> None:
    rows = [{"a": "cat", "b": "dog", "gt": "cat"}]
    config = {
        "default": {"column_mapping": {"response": "${data.a}", "ground_truth": "${data.gt}"}},
        "em": {"column_mapping": {"response": "${data.b}"}},
    }
    res = evaluate(
        data=rows,
        evaluators={"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator()},
        evaluator_config=config,
        store=tmp_path / "s.db",
    )
    assert res["rows"][0]["outputs.f1.f1_score"] == 1.0
    assert res["rows"][0]["outputs.em.exact_match"] == 0.0


def test_target_outputs_join_the_row_and_are_stored(tmp_path: Path) -> None:
    calls: list[str] = []

    def app(query: str) -> dict[str, Any]:
        calls.append(query)
        if query == "boom":
            raise RuntimeError("backend down")
        return {"response": query.upper(), "latency_ms": 3}

    rows = [{"query": "cat", "ground_truth": "CAT"}, {"query": "boom", "ground_truth": "x"}]
    res = evaluate(
        data=rows,
        target=app,
        evaluators={"f1": F1ScoreEvaluator()},
        evaluator_config={"f1": {"column_mapping": {"response": "${target.response}"}}},
        store=tmp_path / "s.db",
    )
    first, second = res["rows"]
    assert first["outputs.response"] == "CAT" and first["outputs.latency_ms"] == 3
    assert first["outputs.f1.f1_score"] == 1.0
    assert "backend down" in second["outputs.target_error"]
    assert "target failed" in second["outputs.f1.f1_score_error"]
    assert res.summary["f1.f1_score"]["n_failed"] == 1 and res.summary["f1.f1_score"]["n"] == 1
    from touchstone import RunStore

    stored = RunStore(tmp_path / "s.db").get_rows(res.run["id"])
    assert stored[0].target == {"response": "CAT", "latency_ms": 3}
    assert sorted(calls) == ["boom", "cat"]


def test_failures_are_counted_never_nan(tmp_path: Path) -> None:
    def flaky(response: str, ground_truth: str) -> dict[str, float]:
        if response == "bad":
            raise ValueError("cannot score")
        return {"score": 1.0}

    rows = [
        {"response": "ok", "ground_truth": "x"},
        {"response": "bad", "ground_truth": "x"},
        {"response": "ok", "ground_truth": "x"},
    ]
    res = evaluate(data=rows, evaluators={"fl": flaky}, store=tmp_path / "s.db")
    assert res.summary["fl.score"]["n"] == 2 and res.summary["fl.score"]["n_failed"] == 1
    assert res["metrics"]["fl.score"] == 1.0
    assert res["rows"][1]["outputs.fl.fl_error"] == "ValueError: cannot score"
    # the row keeps the key the other rows have, as NaN (the SDK's frame); the summary has no NaN
    assert math.isnan(res["rows"][1]["outputs.fl.score"])
    assert "outputs.fl.fl_error" not in res["rows"][0]
    with pytest.raises(EvaluationFailedError, match="1 scores"):
        evaluate(data=rows, evaluators={"fl": flaky}, fail_on_evaluator_errors=True, store=tmp_path / "s.db")


def test_summary_interval_is_seeded_and_contains_mean(tmp_path: Path) -> None:
    import random

    rng = random.Random(0)
    rows = [{"response": rng.choice(["a b c", "a", "x y"]), "ground_truth": "a b c"} for _ in range(200)]
    r1 = evaluate(data=rows, evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "s.db")
    r2 = evaluate(data=rows, evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "s.db")
    e1 = r1.summary["f1.f1_score"]
    assert e1 == r2.summary["f1.f1_score"]
    lo, hi = e1["ci95"]
    assert lo < e1["mean"] < hi
    assert e1["pass_rate"] == pytest.approx(
        sum(r["outputs.f1.f1_score_result"] == "pass" for r in r1["rows"]) / 200
    )


def test_to_pandas_and_directory_output(tmp_path: Path) -> None:
    res = evaluate(
        data=ROWS,
        evaluators={"f1": F1ScoreEvaluator()},
        output_path=tmp_path / "out",
        store=tmp_path / "s.db",
    )
    frame = res.to_pandas()
    assert list(frame["outputs.f1.f1_score"]) == [1.0, 0.0]
    lines = (tmp_path / "out" / "rows.jsonl").read_text().splitlines()
    assert [json.loads(x) for x in lines] == res["rows"]
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert set(summary) == {"metrics", "summary", "run"}
    assert {"id", "name", "started", "finished", "status", "config", "package_version"} <= set(summary["run"])
    assert summary["run"]["status"] == "completed"


def test_async_function_evaluator(tmp_path: Path) -> None:
    async def length(response: str) -> float:
        return float(len(response))

    res = evaluate(data=ROWS, evaluators={"len": length}, store=tmp_path / "s.db")
    # a plain number is the output `output`, as in the SDK
    assert [r["outputs.len.output"] for r in res["rows"]] == [11.0, 3.0]
    assert res["metrics"]["len.output"] == 7.0


def test_mapping_errors(tmp_path: Path) -> None:
    with pytest.raises(InputValidationError, match="refers to a target"):
        evaluate(
            data=ROWS,
            evaluators={"f1": F1ScoreEvaluator()},
            evaluator_config={"f1": {"column_mapping": {"response": "${target.r}"}}},
            store=tmp_path / "s.db",
        )
    with pytest.raises(InputValidationError, match="invalid column mapping"):
        evaluate(
            data=ROWS,
            evaluators={"f1": F1ScoreEvaluator()},
            evaluator_config={"f1": {"column_mapping": {"response": "response"}}},
            store=tmp_path / "s.db",
        )
    with pytest.raises(InputValidationError, match="no evaluator named"):
        evaluate(
            data=ROWS,
            evaluators={"f1": F1ScoreEvaluator()},
            evaluator_config={"f2": {}},
            store=tmp_path / "s.db",
        )


class _Double(Evaluator):
    metric = prefix = score_key = "double"
    inputs = (InputSpec("response", "text"),)

    def _score(self, **inputs: Any) -> dict[str, Any]:
        return self.result(float(len(inputs["response"]) * 2))


def test_parallel_batches_equal_serial(tmp_path: Path) -> None:
    rows = [{"response": "x" * (i % 17), "ground_truth": "x" * (i % 5)} for i in range(25_000)]
    evs = {"f1": F1ScoreEvaluator(), "d": _Double()}
    serial = evaluate(data=rows, evaluators=evs, workers=1, store=tmp_path / "s.db")
    parallel = evaluate(data=rows, evaluators=evs, workers=2, store=tmp_path / "s.db")
    assert serial["rows"] == parallel["rows"]
    assert serial["metrics"] == parallel["metrics"]
    # the pooled run summarises its rows' score lines (CompactOutcome), the serial one Score objects
    assert serial.summary == parallel.summary and parallel.summary["f1.f1_score"]["n"] == 25_000


class _FailsOnEmpty(Evaluator):
    metric = prefix = score_key = "strict"
    inputs = (InputSpec("response", "text"),)

    def _score(self, **inputs: Any) -> dict[str, Any]:
        if not inputs["response"]:
            raise ValueError("empty response")
        return self.result(float(len(inputs["response"])))


def test_parallel_paths_store_what_they_return(tmp_path: Path) -> None:
    """In the process pool, plain rows go to the workers as indices and come back with their
    outputs already encoded; mapped inputs go as rows. Both store exactly what the result holds,
    and failures are recorded and counted the same way as in process."""
    from touchstone import RunStore

    rows = [{"answer": "x" * (i % 7), "truth": "x" * (i % 3)} for i in range(21_000)]
    evs = {"strict": _FailsOnEmpty(), "f1": F1ScoreEvaluator()}
    config = {"f1": {"column_mapping": {"response": "${data.answer}", "ground_truth": "${data.truth}"}}}
    results = [
        evaluate(data=rows, evaluators=evs, evaluator_config=config, workers=w, store=tmp_path / f"s{w}.db")
        for w in (1, 2)
    ]
    assert results[0]["rows"] == results[1]["rows"]
    assert results[0]["metrics"] == results[1]["metrics"]
    assert results[1].summary["strict.strict"]["n_failed"] == 3000
    for w, result in zip((1, 2), results, strict=True):
        store = RunStore(tmp_path / f"s{w}.db")
        stored = store.get_scores(result.run["id"])
        for i in (0, 1, 6, 20_999):
            for name in evs:
                out, _ = stored[i, name]
                row = result["rows"][i]
                for k, v in out.items():
                    # as the SDK's frame: a failed row shows the keys the other rows have as NaN (and
                    # keeps touchstone's account of the failure), and a column of None with gaps is NaN
                    got = row[f"outputs.{name}.{k}"]
                    nan_ok = f"{name}_error" in out or v is None
                    assert got == v or (nan_ok and math.isnan(got)), (i, name, k)
