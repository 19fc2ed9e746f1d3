# mypy: ignore-errors
"""evaluate() with judge evaluators over a JSONL file: per-row outputs and the metrics."""
import json
import os
import tempfile
from pathlib import Path

from azure.ai.evaluation import CoherenceEvaluator, GroundednessEvaluator, evaluate

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
tmp = tempfile.mkdtemp()
data = Path(tmp) / "rag.jsonl"
rows = [
    {"query": "Opening hours?", "context": "The shop opens 9-17 on weekdays.", "response": "9 to 5 on weekdays. [J5]"},
    {"query": "Do you ship abroad?", "context": "We ship within the EU only.", "response": "Yes, worldwide. [J1]"},
    {"query": "Return policy?", "context": "Returns within 30 days.", "response": "You can return items within 30 days."},
]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), evaluators={"groundedness": GroundednessEvaluator(model_config),
                                              "coherence": CoherenceEvaluator(model_config)})
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
