# mypy: ignore-errors
"""evaluate() with a target function: its outputs mapped into an evaluator."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit


def answer(query: str) -> dict:
    """A toy application."""
    return {"response": f"The answer to {query} is 42", "length": len(query)}


tmp = tempfile.mkdtemp()
data = Path(tmp) / "questions.jsonl"
rows = [{"query": "life", "ground_truth": "42 is the answer"}, {"query": "everything", "ground_truth": "unknown"}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(
    data=str(data),
    target=answer,
    evaluators={"f1": F1ScoreEvaluator()},
    evaluator_config={"f1": {"column_mapping": {"response": "${target.response}", "ground_truth": "${data.ground_truth}"}}},
)
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
