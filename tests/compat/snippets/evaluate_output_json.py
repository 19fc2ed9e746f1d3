# mypy: ignore-errors
"""evaluate(output_path=<file.json>): the file written holds the rows and metrics returned."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit

tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
data.write_text("".join(json.dumps(r) + "\n" for r in [
    {"response": "one fish", "ground_truth": "one fish two fish"}, {"response": "blue", "ground_truth": "red"}]))
target = Path(tmp) / "out" / "run.json"
target.parent.mkdir()
result = evaluate(data=str(data), evaluators={"f1": F1ScoreEvaluator()}, output_path=str(target))
content = json.loads(target.read_text())
emit({"file_rows": content.get("rows"), "file_metrics": content.get("metrics"),
      "same_as_returned": content.get("rows") == result["rows"]}, tmp)
