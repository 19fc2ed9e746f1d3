"""Consistent refusals before anything runs: a resume given other metrics, thresholds or a mapping;
a judge metric on the hosted OpenAI API with no key; and a dry run, which calls nothing, needing no
key or judge at all. Also the run's closing lines: the estimate in one line unless asked for the
table, and a ``touchstone show`` line that finds the run in the store it went to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from touchstone.cli import app
from touchstone.store.sqlite import RunStore

runner = CliRunner()
JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY",
             "AZURE_OPENAI_DEPLOYMENT", "TOUCHSTONE_JUDGE_MODEL", "TOUCHSTONE_PRICES")


@pytest.fixture(autouse=True)
def _no_judge_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


def _data(tmp_path: Path) -> Path:
    path = tmp_path / "rows.jsonl"
    rows = [{"id": f"r{i}", "query": f"q{i}", "response": f"the answer is {i}", "ground_truth": f"answer {i}"}
            for i in range(4)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _eval(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = runner.invoke(app, ["eval", str(_data(tmp_path)), "--store", str(tmp_path / "runs.db"), "-q",
                                 *args], env=env)
    return result.exit_code, result.output


def test_resume_with_other_metrics_is_refused_and_says_what_differs(tmp_path: Path) -> None:
    code, output = _eval(tmp_path, "-m", "f1_score")
    assert code == 0, output
    (run,) = RunStore(tmp_path / "runs.db").list_runs()
    code, output = _eval(tmp_path, "--resume", run.id, "-m", "bleu_score")
    assert code == 2
    text = " ".join(output.split())
    assert "the run has f1_score" in text and "given bleu_score" in text
    code, output = _eval(tmp_path, "--resume", run.id, "--threshold", "f1_score=0.9")
    assert code == 2 and "thresholds of f1_score" in " ".join(output.split())
    code, output = _eval(tmp_path, "--resume", run.id, "--map", "response=ground_truth")
    assert code == 2 and "column mapping" in " ".join(output.split())
    # naming the same metrics again, or none, resumes
    assert _eval(tmp_path, "--resume", run.id, "-m", "f1_score")[0] == 0
    assert _eval(tmp_path, "--resume", run.id)[0] == 0
    assert len(RunStore(tmp_path / "runs.db").list_runs()) == 1


def test_judge_metric_on_the_openai_api_without_a_key_is_refused_before_a_run(tmp_path: Path) -> None:
    code, output = _eval(tmp_path, "-m", "coherence", "--judge-model", "gpt-4o-mini")
    assert code == 2
    text = " ".join(output.split())
    assert "OPENAI_API_KEY" in text and "coherence" in text
    assert RunStore(tmp_path / "runs.db").list_runs() == []  # nothing was created


def test_dry_run_needs_no_key_and_no_judge(tmp_path: Path) -> None:
    code, output = _eval(tmp_path, "-m", "coherence", "--dry-run")
    assert code == 0, output
    assert "judge calls" in output and "coherence" in output
    assert RunStore(tmp_path / "runs.db").list_runs() == []


def test_a_judge_run_prints_the_estimate_in_one_line_unless_the_table_is_asked(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    judge = ["-m", "coherence", "--judge-model", "gpt-4o-mini", "--judge-base-url", fake_openai.base_url,
             "--no-cache"]
    code, output = _eval(tmp_path, *judge)
    assert code == 0, output
    assert "estimate vs actual: 4 calls" in output and "prompt tokens" not in output
    (run,) = RunStore(tmp_path / "runs.db").list_runs()
    assert f"touchstone show {run.id} --store" in " ".join(output.split())
    code, output = _eval(tmp_path, *judge, "--show-estimate")
    assert code == 0, output
    assert "estimate vs actual" in output and "prompt tokens" in output
