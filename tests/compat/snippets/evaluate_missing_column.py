# mypy: ignore-errors
"""evaluate() where a required column is missing from the data: what the caller gets."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation._exceptions import EvaluationException
from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit, error_info

tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
data.write_text(json.dumps({"response": "only a response"}) + "\n")
out = {}
try:
    result = evaluate(data=str(data), evaluators={"f1": F1ScoreEvaluator()})
    out["raised"] = None
    out["metrics"] = result["metrics"]
except EvaluationException as exc:
    out["raised"] = error_info(exc)
emit(out, tmp)
