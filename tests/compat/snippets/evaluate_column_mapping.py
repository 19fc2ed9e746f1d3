# mypy: ignore-errors
"""evaluate() with column mapping: data columns under other names, per-evaluator and default config."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit

tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [
    {"question": "Who painted the Mona Lisa?", "answer": "Leonardo da Vinci", "truth": "Leonardo da Vinci painted it"},
    {"question": "Speed of light?", "answer": "About 300,000 km per second", "truth": "299,792 km per second"},
]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(
    data=str(data),
    evaluators={"f1": F1ScoreEvaluator(), "overlap": F1ScoreEvaluator(threshold=0.3)},
    evaluator_config={
        "f1": {"column_mapping": {"response": "${data.answer}", "ground_truth": "${data.truth}"}},
        "default": {"column_mapping": {"response": "${data.truth}", "ground_truth": "${data.answer}"}},
    },
)
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
