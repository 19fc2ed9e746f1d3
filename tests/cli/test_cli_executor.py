"""``touchstone eval --executor``: a wrong executor or a Ray address without the Ray executor is an
input error (exit 2) before anything runs."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from touchstone.cli import app

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
runner = CliRunner()


def test_unknown_executor_exits_2(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(EXAMPLES / "qa.jsonl"), "-m", "f1_score", "--executor", "dask",
                                 "--store", str(tmp_path / "r.db"), "-q"])
    assert result.exit_code == 2, result.output
    assert "--executor must be 'local' or 'ray'" in result.output


def test_ray_address_needs_the_ray_executor(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(EXAMPLES / "qa.jsonl"), "-m", "f1_score",
                                 "--ray-address", "127.0.0.1:1", "--store", str(tmp_path / "r.db"), "-q"],
                           env={"RAY_ADDRESS": ""})
    assert result.exit_code == 2, result.output
    assert "--ray-address needs --executor ray" in result.output
