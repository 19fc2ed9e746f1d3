"""The run's progress bar: nothing before the first scored row (a refused input prints no bar), then
rows done, their rate and, for a judge run, the judge calls made so far."""

from __future__ import annotations

import io
import json
from pathlib import Path

from rich.console import Console
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from touchstone import evaluate
from touchstone.cli import app
from touchstone.cli.progress import RunProgress
from touchstone.evaluators import registry

runner = CliRunner()


def test_a_judge_run_shows_rows_rate_and_calls(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    console = Console(file=io.StringIO(), width=120, force_terminal=False)
    config = {"model": "gpt-4o-mini", "base_url": fake_openai.base_url, "api_key": "sk-test"}
    rows = [{"query": f"q{i}", "response": f"answer {i}"} for i in range(6)]
    with RunProgress(console, quiet=False) as progress:
        evaluate(data=rows, evaluators={"coherence": registry.create("coherence", model_config=config)},
                 store=tmp_path / "runs.db", progress=progress, cache=False)
        fields = progress.fields()
    assert fields["calls"] == 6 == fake_openai.count
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "6/6" in text and "rows/s" in text and "6 calls" in text


def test_refused_input_prints_no_bar(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps({"answer": "x"}) + "\n")
    result = runner.invoke(app, ["eval", str(data), "-m", "f1_score", "--store", str(tmp_path / "runs.db")])
    assert result.exit_code == 2
    assert "scoring" not in result.output
