"""``touchstone rank``: votes in the battle format (JSONL and CSV), validation with file/line/field
errors (exit 2), the table and the JSON, Elo and an anchor, and system names shown as text."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from touchstone.cli.app import app
from touchstone.errors import InputValidationError
from touchstone.people.votes import load_battles
from touchstone.stats.pairwise import rank_battles

runner = CliRunner()


def simulated_votes(n: int = 400, seed: int = 0) -> list[dict[str, str]]:
    rng = np.random.default_rng(seed)
    strength = {"alpha": 1.0, "beta": 0.3, "gamma": -0.4, "[red]delta[/red]": -1.0}
    names = list(strength)
    votes = []
    for _ in range(n):
        a, b = rng.choice(names, 2, replace=False)
        p = 1 / (1 + np.exp(strength[b] - strength[a]))
        u = rng.random()
        winner = (
            "tie"
            if u < 0.1
            else ("tie (bothbad)" if u < 0.15 else ("model_a" if rng.random() < p else "model_b"))
        )
        votes.append({"model_a": str(a), "model_b": str(b), "winner": winner})
    return votes


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rank_json_equals_library(tmp_path: Path) -> None:
    votes = simulated_votes()
    path = write_jsonl(tmp_path / "votes.jsonl", votes)
    result = runner.invoke(app, ["rank", str(path), "--json", "--bootstrap", "50", "--seed", "3"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    expected = rank_battles(load_battles(path), bootstrap=50, seed=3)
    assert [s["system"] for s in doc["systems"]] == [s.system for s in expected.systems]
    assert doc["systems"][0]["system"] == "alpha"
    for got, exp in zip(doc["systems"], expected.systems, strict=True):
        assert got["rating"] == pytest.approx(exp.rating)
        assert got["ci_lower"] <= got["rating"] <= got["ci_upper"]
    assert doc["n_battles"] == len(votes) and doc["method"] == "bt"


def test_rank_csv_table_elo_and_anchor(tmp_path: Path) -> None:
    path = tmp_path / "votes.csv"
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=["model_a", "model_b", "winner"])
        writer.writeheader()
        writer.writerows(simulated_votes(200, seed=1))
    result = runner.invoke(
        app,
        [
            "rank",
            str(path),
            "--method",
            "elo",
            "--k",
            "16",
            "--bootstrap",
            "20",
            "--anchor",
            "beta=1200",
            "-q",
        ],
        terminal_width=200,
    )
    assert result.exit_code == 0, result.output
    assert "Elo (K=16)" in result.output and "95% CI" in result.output
    assert "[red]delta[/red]" in result.output  # a name with markup is shown as written
    beta_line = next(line for line in result.output.splitlines() if " beta " in line)
    assert "1200" in beta_line


def test_bad_votes_exit_2_naming_line_and_field(tmp_path: Path) -> None:
    rows = [
        {"model_a": "x", "model_b": "y", "winner": "model_a"},
        {"model_a": "x", "model_b": "y", "winner": "A"},
        {"model_a": "x", "winner": "tie"},
        {"model_a": "x", "model_b": "x", "winner": "tie"},
    ]
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    result = runner.invoke(app, ["rank", str(path)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert 'line 2, field "winner"' in text and "'tie (bothbad)'" in text
    assert 'line 3, field "model_b"' in text
    assert 'line 4, field "model_b"' in text and "cannot battle itself" in text
    with pytest.raises(InputValidationError):
        load_battles(path)


@pytest.mark.parametrize(
    "args",
    [
        ["--method", "glicko"],
        ["--k", "0"],
        ["--bootstrap", "-1"],
        ["--anchor", "nobody=1000"],
        ["--confidence", "1.5"],
    ],
)
def test_bad_options_exit_2(tmp_path: Path, args: list[str]) -> None:
    path = write_jsonl(tmp_path / "votes.jsonl", simulated_votes(20))
    result = runner.invoke(app, ["rank", str(path), *args])
    assert result.exit_code == 2, result.output
    assert "error" in result.output


def test_empty_votes_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    result = runner.invoke(app, ["rank", str(path)])
    assert result.exit_code == 2
