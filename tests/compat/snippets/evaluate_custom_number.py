# mypy: ignore-errors
"""evaluate() with custom function evaluators returning plain numbers (int and float)."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import evaluate

from _emit import emit


def word_count(response):
    return len(response.split())


def answer_ratio(response, ground_truth):
    return len(response) / max(1, len(ground_truth))


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"response": "one two three", "ground_truth": "one two"}, {"response": "four", "ground_truth": "four five six"}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), evaluators={"words": word_count, "ratio": answer_ratio})
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
