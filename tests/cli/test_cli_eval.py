"""touchstone eval / runs / show: files written, gates, exit statuses."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from touchstone.cli import app

EXAMPLES = Path(__file__).parent.parent.parent / "examples"
runner = CliRunner()


def invoke(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, list(args))
    return result.exit_code, result.output


def test_eval_writes_rows_and_summary_then_show(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    code, output = invoke(
        "eval",
        str(EXAMPLES / "qa.jsonl"),
        "-m",
        "f1_score,exact_match",
        "--out",
        str(tmp_path / "o"),
        "--store",
        store,
        "-q",
    )
    assert code == 0, output
    assert "f1_score" in output and "95% CI" in output
    rows = [json.loads(x) for x in (tmp_path / "o" / "rows.jsonl").read_text().splitlines()]
    assert len(rows) == sum(1 for _ in (EXAMPLES / "qa.jsonl").open())
    assert all("outputs.f1_score.f1_score" in r for r in rows)
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    run_id = summary["run"]["id"]
    assert summary["run"]["config"]["evaluators"]["f1_score"]["options"] == {
        "threshold": 0.5, "empty_answers_agree": False
    }
    code, output = invoke("runs", "--store", store)
    assert code == 0 and run_id[:10] in output
    code, output = invoke("show", run_id, "--store", store, "--json")
    assert code == 0
    assert json.loads(output)["metrics"] == summary["metrics"]
    code, output = invoke("show", "nope", "--store", store)
    assert code == 2 and "no run" in output


def test_min_gate_and_thresholds(tmp_path: Path) -> None:
    store = str(tmp_path / "runs.db")
    data = str(EXAMPLES / "qa.jsonl")
    code, _ = invoke("eval", data, "-m", "f1_score", "--min", "f1_score=0.1", "--store", store, "-q")
    assert code == 0
    code, output = invoke("eval", data, "-m", "f1_score", "--min", "f1_score=0.99", "--store", store, "-q")
    assert code == 1 and "below the minimum" in output
    code, output = invoke(
        "eval",
        data,
        "-m",
        "f1_score",
        "--threshold",
        "f1_score=0.0",
        "--out",
        str(tmp_path / "o"),
        "--store",
        store,
        "-q",
    )
    assert code == 0
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    assert summary["summary"]["f1_score.f1_score"]["pass_rate"] == 1.0
    code, output = invoke("eval", data, "-m", "f1_score", "--min", "bleu=0.5", "--store", store, "-q")
    assert code == 2 and "no such metric" in output


def test_map_option(tmp_path: Path) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"answer_text": "cat", "gold": "cat"}) + "\n")
    code, output = invoke(
        "eval",
        str(data),
        "-m",
        "f1_score",
        "--map",
        "response=answer_text,ground_truth=gold",
        "--store",
        str(tmp_path / "s.db"),
        "-q",
        "--min",
        "f1_score=1",
    )
    assert code == 0, output


def test_metrics_lists_registry() -> None:
    code, output = invoke("metrics")
    assert code == 0
    for name in ("f1_score", "exact_match"):
        assert name in output
