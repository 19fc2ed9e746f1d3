"""touchstone eval --preset rag against the loopback fake judge (the triad, plus ranking when ids and
labels are present), and touchstone show listing the claim-level evidence (claim, verdict, document,
reason) of the stored run, in the table and in --json."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest
from typer.testing import CliRunner

from touchstone.cli import app
from touchstone.ui.row_detail import claim_evidence

runner = CliRunner()
JUDGE_ENV = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY",
             "AZURE_OPENAI_DEPLOYMENT", "TOUCHSTONE_JUDGE_MODEL")
ROW = {"query": "How long does the Trailglow run?",
       "context": ["The Trailglow runs 40 hours.", "Nightjar: 12 h."],
       "response": "The Trailglow runs 40 hours. It is waterproof."}


@pytest.fixture(autouse=True)
def _no_judge_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in JUDGE_ENV:
        monkeypatch.delenv(name, raising=False)


def rag_judge(req: FakeRequest) -> str:
    name = str(req.body["response_format"]["json_schema"]["name"])
    if name == "rag_claims":
        return json.dumps({"refusal": False, "claims": [
            {"claim": "The Trailglow runs 40 hours", "reason": "doc-1 says so", "verdict": "supported",
             "document": "doc-1"},
            {"claim": "The Trailglow is waterproof", "reason": "no document mentions it",
             "verdict": "unsupported", "document": ""}]})
    if name == "rag_answer_relevancy":
        return json.dumps({"questions": [ROW["query"]] * 3, "noncommittal": False})
    return json.dumps({"reason": "relevant", "score": 2})


def eval_rag(fake: FakeOpenAIServer, tmp_path: Path, rows: list[dict[str, Any]],
             *extra: str) -> tuple[int, str]:
    pytest.importorskip("sentence_transformers")
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    fake.handler = rag_judge
    result = runner.invoke(app, ["eval", str(data), "--preset", "rag", "--judge-model", "fake-judge",
                                 "--judge-base-url", fake.base_url, "--store", str(tmp_path / "runs.db"),
                                 "--out", str(tmp_path / "out"), "-q", *extra],
                           env={"OPENAI_API_KEY": "sk-test-not-a-real-key-0000"})
    return result.exit_code, result.output


def test_preset_rag_runs_the_triad_and_show_lists_claims(fake_openai: FakeOpenAIServer,
                                                         tmp_path: Path) -> None:
    code, output = eval_rag(fake_openai, tmp_path, [ROW])
    assert code == 0, output
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    metrics = summary["metrics"]
    assert metrics["faithfulness.faithfulness"] == 0.5
    assert metrics["answer_relevancy.answer_relevancy"] == pytest.approx(1.0, abs=1e-5)
    assert metrics["context_relevance.context_relevance"] == 1.0
    assert not any(k.startswith("ranking.") for k in metrics)
    assert summary["summary"]["faithfulness.faithfulness_claims"]["total"] == 2
    run_id = re.search(r"touchstone show (\S+)", output)
    assert run_id, output

    shown = runner.invoke(app, ["show", run_id.group(1), "--store", str(tmp_path / "runs.db")],
                          env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert "claim-level evidence" in shown.output
    for text in ("The Trailglow runs 40 hours", "The Trailglow is waterproof", "unsupported", "doc-1",
                 "no document mentions it"):
        assert text in shown.output, text

    as_json = runner.invoke(app, ["show", run_id.group(1), "--store", str(tmp_path / "runs.db"), "--json"])
    doc = json.loads(as_json.output)
    assert {"row": 0, "evaluator": "faithfulness", "metric": "faithfulness",
            "claim": "The Trailglow is waterproof", "verdict": "unsupported", "document": None,
            "reason": "no document mentions it"} in doc["evidence"]
    hidden = runner.invoke(app, ["show", run_id.group(1), "--store", str(tmp_path / "runs.db"),
                                 "--evidence-rows", "0"])
    assert "claim-level evidence" not in hidden.output


def test_preset_rag_adds_ranking_with_ids_and_labels(fake_openai: FakeOpenAIServer,
                                                     tmp_path: Path) -> None:
    row = {**ROW, "docs": ["d1", "d2", "d3"], "labels": ["d2"],
           "ground_truth": "The Trailglow runs 40 hours."}
    code, output = eval_rag(fake_openai, tmp_path, [row], "--map", "retrieved_documents=docs",
                            "--map", "retrieval_ground_truth=labels", "-m", "f1_score")
    assert code == 0, output
    metrics = json.loads((tmp_path / "out" / "summary.json").read_text())["metrics"]
    assert metrics["ranking.precision_at_1"] == 0.0 and metrics["ranking.recall_at_3"] == 1.0
    assert "f1_score.f1_score" in metrics and "faithfulness.faithfulness" in metrics  # --metrics added


def test_unknown_preset_is_an_input_error(tmp_path: Path) -> None:
    data = tmp_path / "rows.jsonl"
    data.write_text(json.dumps(ROW) + "\n")
    result = runner.invoke(app, ["eval", str(data), "--preset", "ragg", "--store", str(tmp_path / "r.db")])
    assert result.exit_code == 2 and "unknown preset 'ragg'" in result.output


def test_claim_evidence_reads_claims_and_sentences() -> None:
    scores: dict[tuple[int, str], tuple[dict[str, Any], None]] = {
        (1, "gp"): ({"groundedness_pro_label": False, "groundedness_pro_properties": {"sentences": [
            {"sentence": "S.", "verdict": "ungrounded", "document": None, "label": "neutral"}]}}, None),
        (0, "f"): ({"faithfulness": 1.0, "faithfulness_properties": {"claims": [
            {"claim": "C", "verdict": "supported", "document": "doc-2", "reason": "r"}]}}, None),
        (2, "x"): ({"x_properties": {"claims": "not a list"}, "y_properties": None}, None),
    }
    assert claim_evidence(scores) == [
        {"row": 0, "evaluator": "f", "metric": "faithfulness", "claim": "C", "verdict": "supported",
         "document": "doc-2", "reason": "r"},
        {"row": 1, "evaluator": "gp", "metric": "groundedness_pro", "claim": "S.", "verdict": "ungrounded",
         "document": None, "reason": ""},
    ]
