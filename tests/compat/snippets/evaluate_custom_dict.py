# mypy: ignore-errors
"""evaluate() with a callable-class evaluator returning a dict of several values (number, bool, str)."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import evaluate

from _emit import emit


class AnswerLength:
    def __init__(self, *, limit=10):
        self.limit = limit

    def __call__(self, *, response: str, **kwargs):
        n = len(response)
        return {"length": n, "too_long": n > self.limit, "label": "long" if n > self.limit else "short",
                "ratio": n / self.limit}


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"response": "short"}, {"response": "a much longer response text"}, {"response": ""}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), evaluators={"answer_length": AnswerLength(limit=8)})
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
