# mypy: ignore-errors
"""evaluate() with a target returning a dict with a nested value and an int, an evaluation name, and
the result's studio_url."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit


def app(query):
    return {"response": f"about {query}", "meta": {"tokens": len(query)}, "score": 1}


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"query": "cats", "ground_truth": "about cats"}, {"query": "birds", "ground_truth": "nothing"},
        {"query": "dogs", "ground_truth": "dogs"}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), target=app, evaluators={"f1": F1ScoreEvaluator()}, evaluation_name="target-run")
emit({"rows": result["rows"], "metrics": result["metrics"], "studio_url": result["studio_url"]}, tmp)
