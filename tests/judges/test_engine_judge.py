"""Judge calls inside ``evaluate()``: faults change nothing in the scores, every retry is counted, a
bad key stops the run at once, a re-run is served from the cache, nothing secret is stored."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.judge_eval import ToyJudgeEvaluator, expected_score, toy_judge_handler
from tests.fakes.openai_server import FakeOpenAIServer, FaultPlan, Reply

from touchstone import RunStore, evaluate
from touchstone.errors import RunAbortedError

KEY = "sk-test-secret-key-abcdef123456"
FAST: dict[str, Any] = {"timeout": 0.5, "judge_settings": {"backoff_base": 0.001, "backoff_max": 0.01}}


def rows(n: int) -> list[dict[str, str]]:
    return [
        {"query": f"question {i}", "response": " ".join([f"answer number {i}"] * (1 + i % 3))}
        for i in range(n)
    ]


def config(server: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "fake-judge", "base_url": server.base_url, "api_key": KEY}


def scores(result: Any) -> list[Any]:
    return [r.get("outputs.judge.toy_judge") for r in result.rows]


def run(server: FakeOpenAIServer, tmp_path: Path, data: list[dict[str, str]], **options: Any) -> Any:
    opts = {**FAST, **options}
    return evaluate(
        data=data,
        evaluators={"judge": ToyJudgeEvaluator(config(server))},
        store=tmp_path / "runs.db",
        **opts,
    )


def test_transient_faults_change_no_score(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    data = rows(80)
    clean = run(fake_openai, tmp_path, data, cache=False)
    assert fake_openai.count == 80 and clean.n_failed == 0

    fake_openai.reset()
    fake_openai.faults = FaultPlan(rate=0.25, attempts=2, seed=3)
    fake_openai.hang_seconds = 5
    faulty = run(fake_openai, tmp_path, data, cache=False, concurrency=16)

    assert scores(faulty) == scores(clean) == [expected_score(d["response"]) for d in data]
    assert faulty.n_failed == 0 and len(faulty.rows) == 80
    injected = fake_openai.faults_injected
    assert 20 <= injected <= 60  # about a quarter of the rows, each faulted twice
    stats = faulty.run["judge"]["stats"]
    # every faulted request was retried or hedged (a hung one sent again beside it), and counted
    hedged = stats.get("hedged", 0)
    assert stats["retries"] + hedged == injected and stats["calls"] == 80 + injected == fake_openai.count
    usage = faulty.run["usage"]  # the per-row accounting adds up to the same
    assert usage["retries"] + usage.get("hedged", 0) == injected
    assert usage["calls"] == 80 + injected


def test_authentication_error_stops_the_run(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = lambda r: Reply(status=401, error=f"Incorrect API key provided: {KEY}",
                                          error_code="invalid_api_key")
    with pytest.raises(RunAbortedError) as info:
        run(fake_openai, tmp_path, rows(200), cache=False, concurrency=4)
    message = str(info.value)
    assert "authentication failed" in message and KEY not in message
    assert fake_openai.count <= 4 * 4  # the requests already in flight at most, not one per row
    store = RunStore(tmp_path / "runs.db")
    (stored_run,) = store.list_runs()
    assert stored_run.status == "aborted"
    assert store.count_scores(stored_run.id) == 0  # no row recorded as failed for a run-wide cause
    # the summary still lists the metric, every row counted as failed with the cause
    partial = info.value.result  # type: ignore[attr-defined]
    entry = partial.summary["judge.toy_judge"]
    assert entry["n"] == 0 and entry["n_failed"] == 200
    assert stored_run.summary is not None and stored_run.summary["summary"]
    assert all(
        "the run was stopped" in str(v) for r in partial.rows for k, v in r.items() if k.endswith("_error")
    )
    assert KEY.encode() not in (tmp_path / "runs.db").read_bytes()


def test_rows_scored_before_a_stop_are_all_stored(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    # Results are written in groups (at most 0.1 s late): a run that stops keeps every score it got.
    answered = 0

    def handler(request: Any) -> Reply:
        nonlocal answered
        if answered >= 25:
            return Reply(status=401, error="Incorrect API key provided", error_code="invalid_api_key")
        answered += 1
        return toy_judge_handler(request)

    fake_openai.handler = handler
    with pytest.raises(RunAbortedError) as info:
        run(fake_openai, tmp_path, rows(200), cache=False, concurrency=4)
    partial = info.value.result  # type: ignore[attr-defined]
    scored = [r for r in partial.rows if not math.isnan(r["outputs.judge.toy_judge"])]
    store = RunStore(tmp_path / "runs.db")
    (stored_run,) = store.list_runs()
    assert len(scored) == 25 and store.count_scores(stored_run.id) == 25


def test_cached_rerun_makes_no_request(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    data = rows(30)
    first = run(fake_openai, tmp_path, data, cache_path=str(tmp_path / "cache.db"))
    assert fake_openai.count == 30
    second = run(fake_openai, tmp_path, data, cache_path=str(tmp_path / "cache.db"))
    assert fake_openai.count == 30  # zero new requests
    assert scores(second) == scores(first)
    assert second.run["judge"]["stats"]["cache_hits"] == 30 and second.run["judge"]["stats"]["calls"] == 0
    assert second.run["usage"]["cache_hits"] == 30
    third = run(fake_openai, tmp_path, data, cache=False)
    assert fake_openai.count == 60 and scores(third) == scores(first)
    for path in (tmp_path / "cache.db", tmp_path / "runs.db"):
        assert KEY.encode() not in path.read_bytes()


def test_per_row_accounting_and_provenance(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    result = evaluate(
        data=rows(5),
        evaluators={"judge": ToyJudgeEvaluator({**config(fake_openai), "model": "gpt-4o-mini"})},
        store=tmp_path / "runs.db",
        cache=False,
        # a generous timeout: a reply slower than FAST's 0.5 s on a busy machine would be retried, and
        # one call per row is what this test counts
        **{**FAST, "timeout": 30},
    )
    store = RunStore(tmp_path / "runs.db")
    stored = store.get_scores(result.run["id"])
    for i in range(5):
        _, usage = stored[(i, "judge")]
        assert usage is not None and usage["calls"] == 1 and usage["prompt_tokens"] > 0
        assert usage["cost_usd"] > 0  # gpt-4o-mini has a known price
    judge = result.run["judge"]
    assert judge["models"][0]["model"] == "gpt-4o-mini" and judge["models"][0]["host"].startswith("127.0.0.1")
    assert judge["settings"]["cache"] is False
    assert KEY not in repr(result.run)


def test_row_failure_is_recorded_and_run_continues(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = toy_judge_handler
    fake_openai.faults = FaultPlan(rate=0.2, kinds=("503",), attempts=99, seed=1)
    result = run(fake_openai, tmp_path, rows(20), cache=False, max_retries=1)
    failed = [r for r in result.rows if r.get("outputs.judge.toy_judge_error")]
    assert failed and len(failed) < 20
    assert all("503" in r["outputs.judge.toy_judge_error"] for r in failed)
    assert result.run["judge"]["stats"]["failed_calls"] == len(failed)


def test_dry_run_counts_calls_without_calling(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    from touchstone.engine.dryrun import estimate

    fake_openai.handler = toy_judge_handler
    model = {**config(fake_openai), "model": "gpt-4o-mini"}
    est = estimate(data=rows(12), evaluators={"judge": ToyJudgeEvaluator(model)})
    assert fake_openai.count == 0
    assert est.rows == 12 and est.calls == 12 and est.prompt_tokens > 12
    assert est.cost_usd is not None and est.cost_usd > 0
    assert "12 judge calls" in est.lines()[0]


def test_keys_in_options_are_not_stored(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """A key in an option the run keeps in its configuration (evaluate() takes only known options:
    ``tags`` is kept as given) and in the evaluator's model configuration never reaches the store."""
    fake_openai.handler = toy_judge_handler
    run(fake_openai, tmp_path, rows(2), cache=False, tags={"model_config": config(fake_openai)})
    assert KEY.encode() not in (tmp_path / "runs.db").read_bytes()
