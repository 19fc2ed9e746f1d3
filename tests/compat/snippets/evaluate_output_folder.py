# mypy: ignore-errors
"""evaluate(output_path=<folder>): which files appear and what evaluation_results.json holds."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit

tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
data.write_text("".join(json.dumps(r) + "\n" for r in [
    {"response": "red apple", "ground_truth": "a red apple"}, {"response": "pear", "ground_truth": "green pear"}]))
out_dir = Path(tmp) / "results"
out_dir.mkdir()
evaluate(data=str(data), evaluators={"f1": F1ScoreEvaluator()}, output_path=str(out_dir))
saved = out_dir / "evaluation_results.json"
out = {"has_evaluation_results_json": saved.exists()}
if saved.exists():
    content = json.loads(saved.read_text())
    out["rows"] = content.get("rows")
    out["metrics"] = content.get("metrics")
emit(out, tmp)
