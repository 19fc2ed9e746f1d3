"""evaluate(**options): a misspelt option is refused before anything is loaded or called, naming the
closest valid one; every option the CLI, the monitor and SDK users pass is accepted."""

from __future__ import annotations

import json
import warnings
from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from touchstone import F1ScoreEvaluator, evaluate
from touchstone.cli import app
from touchstone.engine import runner
from touchstone.engine.known_options import known_options
from touchstone.engine.planning import EvaluationPlan, judge_options
from touchstone.errors import UnknownOptionError
from touchstone.judges.config import JudgeSettings

ROWS = [
    {"response": "a red apple", "ground_truth": "red apple"},
    {"response": "pear", "ground_truth": "a pear"},
]


def test_a_misspelt_option_names_the_closest_before_anything_runs(tmp_path: Path) -> None:
    calls: list[str] = []

    def target(query: str) -> dict[str, str]:
        calls.append(query)
        return {"response": query}

    def metric(response: str) -> dict[str, float]:
        calls.append(response)
        return {"n": 1.0}

    store = tmp_path / "runs.db"
    missing = tmp_path / "not-there.jsonl"  # loading it would be the first error, were data loaded first
    with pytest.raises(UnknownOptionError, match="concurrency") as raised:
        evaluate(data=str(missing), evaluators={"m": metric}, target=target, store=store, concurency=4)
    assert "concurency" in str(raised.value)
    assert isinstance(raised.value, TypeError)  # as a Python call with an unknown keyword raises
    assert calls == [] and not store.exists()


def test_an_option_far_from_any_lists_the_valid_ones() -> None:
    with pytest.raises(UnknownOptionError, match=r"valid options: .*concurrency"):
        evaluate(data=ROWS, evaluators={"f1": F1ScoreEvaluator()}, store=":memory:", zzzzzz=1)


def test_every_judge_setting_and_run_option_is_known() -> None:
    names = known_options()
    assert {f.name for f in fields(JudgeSettings)} <= names
    run = {"judge_settings", "target_concurrency", "workers_async", "retry_failed", "sampling", "monitor"}
    assert run <= names
    given = judge_options(concurrency=2, cache=False, timeout=5.0, max_retries=1, http_transport="auto",
                          hedge=True)
    plan = EvaluationPlan(evaluators={}, evaluator_config={}, judge_options=dict(given, prices={}))
    decided = set(plan.evaluate_kwargs()) - {"evaluators", "evaluator_config", "resume"}
    assert decided and decided <= names


def test_the_sdk_keyword_arguments_are_accepted(tmp_path: Path) -> None:
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        result = evaluate(
            data=ROWS, evaluators={"f1": F1ScoreEvaluator()}, store=tmp_path / "runs.db",
            evaluation_name="sdk kwargs", tags={"team": "qa"}, user_agent="tests",
            azure_ai_project={"subscription_id": "s", "resource_group_name": "g", "project_name": "p"},
            _use_pf_client=False, _use_run_submitter_client=True,
        )
    assert len(result.rows) == 2


def test_the_options_the_cli_passes_are_accepted(
    tmp_path: Path, fake_openai: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "TOUCHSTONE_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    seen: list[dict[str, Any]] = []
    real = runner.evaluate

    def watched(**kwargs: Any) -> Any:
        seen.append(kwargs)
        return real(**kwargs)

    monkeypatch.setattr(runner, "evaluate", watched)
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(
        json.dumps({"query": f"q{i}", "response": f"answer {i}", "ground_truth": f"answer {i}"}) + "\n"
        for i in range(6)
    ))
    args = ["eval", str(data), "-m", "f1_score,coherence", "--judge-model", "gpt-4o-mini",
            "--judge-base-url", fake_openai.base_url, "--store", str(tmp_path / "runs.db"), "-q",
            "--no-cache",
            "--concurrency", "3", "--timeout", "20", "--max-retries", "1", "--sample", "4", "--seed", "1",
            "--executor", "local", "--retry-failed", "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(app, args, env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"})
    assert result.exit_code == 0, result.output
    assert seen, "the command line did not call evaluate()"
    named = {"data", "evaluators", "evaluator_config", "target", "output_path", "evaluation_name",
             "fail_on_evaluator_errors", "store", "resume", "progress", "workers", "executor"}
    extra = set(seen[0]) - named
    assert {"concurrency", "timeout", "max_retries", "sampling", "retry_failed"} <= extra
    assert extra <= known_options()
