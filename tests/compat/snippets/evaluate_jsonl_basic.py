# mypy: ignore-errors
"""evaluate() on a JSONL file with F1 and ROUGE: rows and aggregate metrics."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, RougeScoreEvaluator, RougeType, evaluate

from _emit import emit

tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [
    {"query": "Capital of France?", "response": "Paris is the capital.", "ground_truth": "The capital is Paris."},
    {"query": "Largest planet?", "response": "Jupiter.", "ground_truth": "Jupiter is the largest planet."},
    {"query": "Color of the sky?", "response": "Green.", "ground_truth": "Blue."},
]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), evaluators={"f1": F1ScoreEvaluator(), "rouge": RougeScoreEvaluator(RougeType.ROUGE_1)})
emit({"rows": result["rows"], "metrics": result["metrics"], "studio_url": result.get("studio_url")}, tmp)
