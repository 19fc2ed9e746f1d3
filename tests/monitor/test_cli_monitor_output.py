"""``touchstone monitor --once`` prints one line per window and a closing summary (a table per window
only with ``--tables``), so thirty windows read as thirty lines, not thirty tables."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from touchstone.cli.app import app

runner = CliRunner()


def _source(tmp_path: Path, windows: int) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    rows = [
        {"id": f"w{h}-{i}", "timestamp": f"2025-05-0{1 + h // 24}T{h % 24:02d}:{10 + i:02d}:00Z",
         "response": "the cat sat" if i else "a dog", "ground_truth": "the cat sat"}
        for h in range(windows) for i in range(3)
    ]
    (src / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return src


def test_once_prints_a_line_per_window_and_a_summary(tmp_path: Path) -> None:
    args = ["monitor", str(_source(tmp_path, 30)), "-m", "f1_score", "--window", "1h", "--once",
            "--store", str(tmp_path / "runs.db"), "--state", str(tmp_path / "state")]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if " · 3 rows · " in line]
    assert len(lines) == 30
    assert all("f1_score 0.6667" in line for line in lines)  # (1 + 1 + 0) / 3 on every window
    assert "30 windows evaluated, 0 with alerts; latest: touchstone show" in result.output
    assert "┏" not in result.output  # no table
    assert len(result.output.splitlines()) < 40


def test_tables_on_request(tmp_path: Path) -> None:
    args = ["monitor", str(_source(tmp_path, 2)), "-m", "f1_score", "--window", "1h", "--once", "--tables",
            "--store", str(tmp_path / "runs.db"), "--state", str(tmp_path / "state")]
    result = runner.invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert result.output.count("95% CI") == 2
