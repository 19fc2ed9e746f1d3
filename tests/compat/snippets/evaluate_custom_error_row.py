# mypy: ignore-errors
"""evaluate() where a custom evaluator raises on one row: the other rows and evaluators still score."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit


def picky(response):
    if "bad" in response:
        raise ValueError("cannot score this row")
    return {"picky_score": 1.0}


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"response": "good answer", "ground_truth": "good answer"}, {"response": "bad answer", "ground_truth": "answer"}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), evaluators={"picky": picky, "f1": F1ScoreEvaluator()})
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
