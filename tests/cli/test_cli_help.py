"""The command line as a newcomer meets it: ``--version``, the grouped command list, readable help at
80 columns, and a metric catalogue whose names are never cut."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from touchstone._version import __version__
from touchstone.cli import app
from touchstone.cli.app import COMMANDS
from touchstone.evaluators import registry

runner = CliRunner()


def _run(*args: str, columns: int = 80) -> str:
    env = {**os.environ, "COLUMNS": str(columns), "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run([sys.executable, "-m", "touchstone.cli", *args], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_version_flag_prints_the_package_version() -> None:
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output.strip() == f"touchstone {__version__}"


def test_top_level_help_lists_every_command_in_panels_without_importing_them() -> None:
    code = (
        "import sys\n"
        "from touchstone.cli import main\n"
        "try:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('touchstone.cli.') and "
        "m not in ('touchstone.cli.app', 'touchstone.cli.help_layout', 'touchstone.cli.option_rules'))\n"
        "print('LOADED', loaded)\n"
    )
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "TERM": "dumb"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "LOADED []" in done.stdout  # no command module imported to list them
    for entry in COMMANDS:
        assert entry.name in done.stdout
    for panel in {entry.panel for entry in COMMANDS}:
        assert panel in done.stdout
    assert "<bool>" not in done.stdout


def test_eval_help_groups_options_and_shows_plain_placeholders() -> None:
    text = _run("eval", "--help")
    for panel in ("Input", "Metrics", "Judge model", "Run", "Output and gates", "Spending and sampling"):
        assert f"─ {panel} " in text
    assert "<bool>" not in text and "<list[str]>" not in text and "<str>" not in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "--dry-run" in text and "--judge-model" in text


@pytest.mark.parametrize("columns", [80, 200])
def test_metric_names_are_whole_at_any_width(columns: int) -> None:
    text = _run("metrics", columns=columns)
    words = set(text.replace("│", " ").replace("┃", " ").split())
    missing = [name for name in registry.available() if name not in words]
    assert not missing
    assert "…" not in "".join(line.split()[0] for line in text.splitlines() if line.strip())


def test_an_unknown_command_is_a_usage_error() -> None:
    result = runner.invoke(app, ["evaluate"])
    assert result.exit_code == 2
