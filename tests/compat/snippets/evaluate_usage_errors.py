# mypy: ignore-errors
"""evaluate() usage errors: a data file that does not exist, a file that is not JSONL."""
import tempfile
from pathlib import Path

from azure.ai.evaluation._exceptions import EvaluationException
from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit, error_info

tmp = tempfile.mkdtemp()
out = {}
try:
    evaluate(data=str(Path(tmp) / "missing.jsonl"), evaluators={"f1": F1ScoreEvaluator()})
    out["missing_file"] = None
except EvaluationException as exc:
    out["missing_file"] = error_info(exc)
bad = Path(tmp) / "bad.jsonl"
bad.write_text("this is not json\n")
try:
    evaluate(data=str(bad), evaluators={"f1": F1ScoreEvaluator()})
    out["bad_json"] = None
except EvaluationException as exc:
    out["bad_json"] = error_info(exc)
emit(out, tmp)
