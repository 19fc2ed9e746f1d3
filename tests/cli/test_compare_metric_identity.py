"""One metric, one identity: a run made in Python (``evaluators={"f1": F1ScoreEvaluator()}``) and one
made on the command line (``-m f1_score``) compare on the same metric; runs with no metric in
common are exit status 2 naming both sides' metrics, not an empty table and exit 0."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from touchstone import BleuScoreEvaluator, F1ScoreEvaluator, evaluate
from touchstone.cli import app
from touchstone.compare import compare_runs
from touchstone.store import open_store

runner = CliRunner()


def _rows(path: Path, wrong_every: int) -> Path:
    rows = [{"id": f"q{i}", "response": "no idea" if i % wrong_every == 0 else f"answer {i}",
             "ground_truth": f"answer {i}"} for i in range(30)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_python_and_command_line_runs_compare_on_the_same_metric(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    python_run = evaluate(data=str(_rows(tmp_path / "a.jsonl", 1000)), evaluators={"f1": F1ScoreEvaluator()},
                          store=store).run["id"]
    cli = runner.invoke(app, ["eval", str(_rows(tmp_path / "b.jsonl", 3)), "-m", "f1_score", "-q",
                              "--store", str(store)])
    assert cli.exit_code == 0, cli.output
    cli_run = next(r.id for r in open_store(store).list_runs() if r.id != python_run)

    result = runner.invoke(app, ["compare", python_run, cli_run, "--json", "--store", str(store)])
    assert result.exit_code == 1, result.output  # B answers a third of the rows wrongly: a regression
    doc = json.loads(result.stdout)
    (metric,) = [m for m in doc["metrics"] if m["score"] == "f1_score"]
    assert metric["metric"] == "f1.f1_score" and metric["n_pairs"] == 30
    assert metric["verdict"] == "worse"
    # selecting it by either run's name works too
    for name in ("f1.f1_score", "f1_score.f1_score", "f1_score"):
        chosen = compare_runs(open_store(store), python_run, cli_run, metrics=[name])
        assert [m.score for m in chosen.metrics] == ["f1_score"]


def test_no_metric_in_common_is_exit_2_naming_both_sides(tmp_path: Path) -> None:
    store = tmp_path / "runs.db"
    a = evaluate(data=str(_rows(tmp_path / "a.jsonl", 3)), evaluators={"f1": F1ScoreEvaluator()},
                 store=store).run["id"]
    b = evaluate(data=str(_rows(tmp_path / "b.jsonl", 3)), evaluators={"bleu": BleuScoreEvaluator()},
                 store=store).run["id"]
    result = runner.invoke(app, ["compare", a, b, "--store", str(store)])
    text = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "no metric in common" in text and "f1.f1_score" in text and "B has bleu.bleu" in text
