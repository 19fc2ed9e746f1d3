"""Honest exit statuses of ``touchstone eval``: a chosen metric that produced no score on any row
fails the command (status 1) even without --fail-on-error, and the table still lists it with n = 0
and its failures; a metric that failed on some rows only does not. Every command explains its
options in --help."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer
from typer.testing import CliRunner

from touchstone.cli import app
from touchstone.cli.app import COMMANDS as COMMAND_TABLE
from touchstone.cli.app import load_command

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
QA = EXAMPLES / "qa.jsonl"
N_ROWS = sum(1 for _ in QA.open())
runner = CliRunner()


@pytest.fixture(autouse=True)
def _no_judge_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_DEPLOYMENT",
                 "TOUCHSTONE_JUDGE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")


def metric_file(tmp_path: Path, body: str) -> Path:
    """A metric file with one Python metric ``checked`` whose function is ``body``."""
    (tmp_path / "checks.py").write_text(textwrap.dedent(body))
    path = tmp_path / "metrics.yaml"
    path.write_text("metrics:\n  - name: checked\n    function: checks.py:checked\n")
    return path


def table_line(output: str, metric: str) -> list[str]:
    """The cells of ``metric``'s line in the printed summary table."""
    for line in output.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃|]", line) if c.strip()]
        if cells and cells[0] == metric:
            return cells
    raise AssertionError(f"{metric} not in the table:\n{output}")


def test_metric_failing_on_every_row_exits_1_and_is_listed(tmp_path: Path) -> None:
    path = metric_file(tmp_path, """
        def checked(response):
            raise ValueError("the checker is broken")
        """)
    out = tmp_path / "o"
    result = runner.invoke(app, ["eval", str(QA), "-m", "f1_score", "--metric-file", str(path),
                                 "--store", str(tmp_path / "runs.db"), "--out", str(out), "-q"])
    assert result.exit_code == 1, result.output
    assert table_line(result.output, "checked") == ["checked", "—", "—", "0", str(N_ROWS), "—"]
    assert table_line(result.output, "f1_score")[3] == str(N_ROWS)  # the other metric is scored as usual
    message = " ".join(result.output.split())
    assert f"metric checked produced no score (all {N_ROWS} rows failed)" in message
    assert "ValueError: the checker is broken" in message
    assert message.count("produced no score") == 1
    assert (out / "summary.json").exists() and (out / "rows.jsonl").exists()  # written all the same


def test_metric_failing_on_some_rows_exits_0_without_fail_on_error(tmp_path: Path) -> None:
    path = metric_file(tmp_path, """
        def checked(response):
            if "Trailglow" in response:
                raise ValueError("not this one")
            return 1.0
        """)
    args = ["eval", str(QA), "-m", "f1_score", "--metric-file", str(path),
            "--store", str(tmp_path / "runs.db"), "-q"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    cells = table_line(result.output, "checked")
    assert 0 < int(cells[4]) < N_ROWS and "produced no score" not in result.output
    result = runner.invoke(app, [*args, "--fail-on-error"])
    assert result.exit_code == 1 and "could not be obtained" in result.output


def test_judge_metric_with_unusable_replies_exits_1(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.handler = lambda request: "I would rather not give a score."  # never parseable
    result = runner.invoke(app, [
        "eval", str(QA), "-m", "f1_score,groundedness", "--judge-model", "fake-judge",
        "--judge-base-url", fake_openai.base_url, "--store", str(tmp_path / "runs.db"), "--no-cache", "-q",
    ])
    assert result.exit_code == 1, result.output
    assert fake_openai.count > 0
    message = " ".join(result.output.split())
    if "run stopped" not in message:  # the run may also be stopped early as hopeless; either way it fails
        cells = table_line(result.output, "groundedness")
        assert cells[1] == "—" and cells[3] == "0" and cells[4] == str(N_ROWS)
        assert "metric groundedness produced no score" in message
    assert "sk-test" not in result.output


def test_min_on_a_metric_with_no_score_is_a_failed_gate(tmp_path: Path) -> None:
    path = metric_file(tmp_path, "def checked(response):\n    raise ValueError('broken')\n")
    result = runner.invoke(app, ["eval", str(QA), "-m", "f1_score", "--metric-file", str(path),
                                 "--min", "checked=0.5", "--store", str(tmp_path / "runs.db"), "-q"])
    assert result.exit_code == 1, result.output
    assert "gate failed" in result.output and "below the minimum" in result.output


def test_table_renders_an_entry_without_a_score() -> None:
    """The summary shape with every evaluator's main metric (n = 0 and mean None when all rows failed),
    as ``touchstone show`` reads it back from the store."""
    from rich.console import Console

    from touchstone.cli.common import summary_table

    summary: dict[str, dict[str, Any]] = {
        "f1_score.f1_score": {"mean": 0.5, "n": 3, "n_failed": 0, "ci95": [0.25, 0.75], "pass_rate": 2 / 3},
        "groundedness.groundedness": {"mean": None, "n": 0, "n_failed": 3, "higher_is_better": True},
    }
    console = Console(record=True, width=120)
    console.print(summary_table(summary))
    text = console.export_text()
    assert table_line(text, "f1_score") == ["f1_score", "0.5000", "[0.2500, 0.7500]", "3", "0", "66.7%"]
    assert table_line(text, "groundedness") == ["groundedness", "—", "—", "0", "3", "—"]


COMMANDS = ["eval", "metrics", "runs", "show", "version"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_of_each_command_explains_every_option(command: str) -> None:
    result = runner.invoke(app, [command, "--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    click_command = load_command(next(c for c in COMMAND_TABLE if c.name == command))
    assert click_command.help  # the command says what it does
    for param in click_command.params:
        if param.name == "help":
            continue
        assert getattr(param, "help", None), f"{command}: {param.name} has no help text"
        for flag in getattr(param, "opts", []):
            if flag.startswith("--"):
                assert flag in result.output, f"{command} --help does not show {flag}"


def test_top_level_help_lists_every_command() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0
    for command in COMMANDS:
        assert command in result.output


def test_unusable_home_runs_without_a_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "home"
    home.write_text("a file where the home directory should be")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("TOUCHSTONE_STORE", raising=False)
    result = runner.invoke(app, ["eval", str(QA), "-m", "f1_score", "-q"])
    assert result.exit_code == 0, result.output
    message = " ".join(result.output.split())
    assert message.count("warning: cannot use the default run store") == 1
    assert "kept in memory only: no run store" in message and "Traceback" not in message
    assert table_line(result.output, "f1_score")[3] == str(N_ROWS)
