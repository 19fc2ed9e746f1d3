# mypy: ignore-errors
"""evaluate(fail_on_evaluator_errors=True) with an evaluator that raises: what the caller catches."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation._exceptions import EvaluationException
from azure.ai.evaluation import evaluate

from _emit import emit, error_info


def broken(response):
    raise RuntimeError("evaluator exploded")


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
data.write_text(json.dumps({"response": "hello"}) + "\n")
out = {}
try:
    evaluate(data=str(data), evaluators={"broken": broken}, fail_on_evaluator_errors=True)
    out["raised"] = None
except EvaluationException as exc:
    out["raised"] = error_info(exc)  # the SDK raises a private subclass
    out["is_evaluation_exception"] = True
except Exception as exc:
    out["raised"] = error_info(exc, with_type=True)
    out["is_evaluation_exception"] = False
emit(out, tmp)
