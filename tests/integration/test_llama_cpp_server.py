"""Judge metrics against a real OpenAI-compatible server (llama-cpp-python with Gemma 3 270M).

The fake server in ``tests/fakes`` answers whatever the tests script; this one is a real server with
its own ideas of what a request may contain (``response_format`` ``text`` or ``json_object``, not
``json_schema``). Every row of groundedness and coherence must come back with a 1-5 score, both from
``evaluate()`` and from the command line. A 270M model's scores mean nothing: what is checked is
the path from the evaluator through negotiation, request, parsing and aggregation."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import LlamaServer
from touchstone import CoherenceEvaluator, GroundednessEvaluator, OpenAIModelConfiguration, evaluate

pytestmark = pytest.mark.integration

# llama-cpp-python's server refuses ``json_schema`` (HTTP 500) and constrains its output to a schema
# given beside ``json_object``: negotiation must settle there, once per run.
EXPECTED_MODE = "json_object"

ROWS: list[dict[str, Any]] = [
    {
        "query": "How long does shipping to Canada take?",
        "context": (
            "We ship to the United States and Canada. Orders to Canada arrive in 5 to 7 business days."
        ),
        "response": "Orders to Canada arrive in 5 to 7 business days.",
    },
    {
        "query": "How much does the Ridgeline 2 tent weigh?",
        "context": "The Ridgeline 2 is a two-person, three-season tent weighing 1.6 kg.",
        "response": "The Ridgeline 2 weighs 1.6 kg.",
    },
    {
        "query": "What is the return window?",
        "context": "Unused items can be returned within 30 days of delivery for a full refund.",
        "response": "You can return anything within 90 days, even if it has been used.",
    },
    {
        "query": "Which lantern lasts longest on one charge?",
        "context": "The Trailglow 300 runs 40 hours on high. The Nightjar runs 12 hours on high.",
        "response": "The Trailglow 300 lasts longest: 40 hours on high against 12 for the Nightjar.",
    },
]

# Few requests at a time: the server answers one after another, on the two cores it shares with
# the rest of the suite, and a long queue would only spend the request timeout waiting.
JUDGE_OPTIONS: dict[str, Any] = {"cache": False, "concurrency": 2, "timeout": 300.0, "max_retries": 2}


def _negotiated_modes(run: Mapping[str, Any]) -> list[Any]:
    """The structured-output mode recorded for each judge model of a run (``run["judge"]["models"]``)."""
    return [model.get("structured_output") for model in (run.get("judge") or {}).get("models", [])]


def _assert_scored(rows: Sequence[dict[str, Any]], metric: str, server: LlamaServer) -> None:
    problems = []
    for i, row in enumerate(rows):
        error = row.get(f"outputs.{metric}.{metric}_error")
        value = row.get(f"outputs.{metric}.{metric}")
        if error or not isinstance(value, int | float) or not 1 <= value <= 5:
            problems.append(f"row {i}: {metric}={value!r}, error={error!r}")
    assert not problems, "\n".join(problems) + f"\n--- server log ---\n{server.log_tail()}"


@pytest.fixture
def judge(llama_server: LlamaServer) -> Iterator[OpenAIModelConfiguration]:
    yield OpenAIModelConfiguration(model=llama_server.model, base_url=llama_server.base_url, api_key="none")


def test_every_row_of_groundedness_and_coherence_is_scored(
    llama_server: LlamaServer, judge: OpenAIModelConfiguration, tmp_path: Path
) -> None:
    result = evaluate(
        data=ROWS,
        evaluators={"groundedness": GroundednessEvaluator(judge), "coherence": CoherenceEvaluator(judge)},
        store=tmp_path / "runs.db",
        **JUDGE_OPTIONS,
    )
    assert len(result.rows) == len(ROWS)
    _assert_scored(result.rows, "groundedness", llama_server)
    _assert_scored(result.rows, "coherence", llama_server)
    assert result.n_failed == 0
    for metric in ("groundedness.groundedness", "coherence.coherence"):
        assert result.summary[metric]["n"] == len(ROWS)
        assert 1 <= result.metrics[metric] <= 5
    assert _negotiated_modes(result.run) == [EXPECTED_MODE], result.run.get("judge")
    # one refused json_schema request, then one call per score (plus repairs and retries): the
    # negotiation is paid once per run, not once per row
    stats = result.run["judge"]["stats"]
    repairs = sum(bool((row.get(f"outputs.{m}.{m}_properties") or {}).get("repaired"))
                  for row in result.rows for m in ("groundedness", "coherence"))
    assert stats["calls"] <= 2 * len(ROWS) + 1 + repairs + stats["retries"], stats


def test_cli_eval_scores_every_row(llama_server: LlamaServer, tmp_path: Path) -> None:
    data = tmp_path / "qa.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in ROWS[:3]), encoding="utf-8")
    out = tmp_path / "out"
    env = {**os.environ, "OPENAI_API_KEY": "none", "TOUCHSTONE_STORE": str(tmp_path / "runs.db")}
    env.pop("OPENAI_BASE_URL", None)
    completed = subprocess.run(
        [
            sys.executable,
            "-c",
            "from touchstone.cli import main; main()",
            "eval",
            str(data),
            "-m",
            "groundedness",
            "--judge-base-url",
            llama_server.base_url,
            "--judge-model",
            llama_server.model,
            "--out",
            str(out),
            "--no-cache",
            "--concurrency",
            "2",
            "--timeout",
            "300",
            "--max-retries",
            "2",
            "-q",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert completed.returncode == 0, (
        f"exit {completed.returncode}\n{completed.stdout}\n{completed.stderr}\n"
        f"--- server log ---\n{llama_server.log_tail()}"
    )
    rows = [json.loads(line) for line in (out / "rows.jsonl").read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 3
    _assert_scored(rows, "groundedness", llama_server)
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["summary"]["groundedness.groundedness"]["n"] == 3
    assert _negotiated_modes(summary["run"]) == [EXPECTED_MODE], summary["run"].get("judge")
