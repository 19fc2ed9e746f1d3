# mypy: ignore-errors
"""evaluate() over JSONL rows that do not all have the same columns (extra keys, a null, ints and
floats in one column), with a custom class evaluator that has __aggregate__."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit


class Length:
    def __call__(self, *, response, **kwargs):
        return len(response)

    def __aggregate__(self, values):
        return {"max": max(values), "count": len(values)}


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"response": "a b", "ground_truth": "a b", "id": 1, "weight": 1},
        {"response": "c", "ground_truth": "d", "id": 2, "weight": 0.5, "note": "extra"},
        {"response": "e f g", "ground_truth": "e", "id": 3, "weight": 2, "note": None}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), evaluators={"len": Length(), "f1": F1ScoreEvaluator()})
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
