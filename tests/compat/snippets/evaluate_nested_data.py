# mypy: ignore-errors
"""evaluate() on JSONL rows with nested objects ({"item": {...}}): inputs mapped from leaves with
``${data.item.<name>}`` (per evaluator and as the default); rows keep the nested inputs and their
flattened ``inputs.item.<leaf>`` keys. (Unmapped nested leaves feed nothing: the SDK then scores rows
without inputs, touchstone stops before running, the stricter way issue 11 keeps.)"""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [
    {"item": {"query": "capital of France?", "response": "Paris is the capital", "ground_truth": "Paris"},
     "meta": {"lang": "en", "scores": {"prior": 2}}},
    {"item": {"query": "2+2?", "response": "four", "ground_truth": "4"}, "meta": {"lang": "en", "scores": {"prior": 5}}},
]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
mapped = evaluate(
    data=str(data),
    evaluators={"f1": F1ScoreEvaluator()},
    evaluator_config={
        "f1": {"column_mapping": {"response": "${data.item.response}", "ground_truth": "${data.item.ground_truth}"}},
    },
)
default_mapping = evaluate(
    data=str(data),
    evaluators={"f1": F1ScoreEvaluator()},
    evaluator_config={"default": {"column_mapping": {"response": "${data.item.response}",
                                                      "ground_truth": "${data.item.ground_truth}"}}},
)
out = {"mapped_rows": mapped["rows"], "mapped_metrics": mapped["metrics"],
       "default_rows": default_mapping["rows"], "default_metrics": default_mapping["metrics"]}
emit(out, tmp)
