# mypy: ignore-errors
"""evaluate() where custom evaluators fail on some rows: int and bool outputs beside the failed rows,
an evaluator that fails on every row, and fail_on_evaluator_errors left off."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit


def counted(response):
    if not response:
        raise ValueError("empty")
    return {"words": len(response.split()), "has_digit": any(c.isdigit() for c in response), "note": None}


def always_broken(response):
    raise RuntimeError("never works")


def number_or_fail(response):
    if "x" in response:
        raise KeyError("x")
    return len(response)


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"response": "one 2 three", "ground_truth": "one two three"}, {"response": "", "ground_truth": "none"},
        {"response": "x marks", "ground_truth": "x marks the spot"}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(
    data=str(data),
    evaluators={"counted": counted, "broken": always_broken, "num": number_or_fail, "f1": F1ScoreEvaluator()},
)
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
