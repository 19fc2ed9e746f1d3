# mypy: ignore-errors
"""The question-answering composite and retrieval through evaluate() on a JSON Lines file."""
import json
import os
import tempfile
from pathlib import Path

from azure.ai.evaluation import QAEvaluator, RetrievalEvaluator, evaluate

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
tmp = tempfile.mkdtemp()
data = Path(tmp) / "qa.jsonl"
rows = [
    {"query": "Capital of Japan?", "context": "Tokyo is the capital of Japan. [J5]", "response": "Tokyo. [J5]",
     "ground_truth": "Tokyo"},
    {"query": "Largest ocean?", "context": "The Pacific is the largest ocean. [J2]", "response": "The Atlantic. [J2]",
     "ground_truth": "The Pacific Ocean"},
]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(data=str(data), evaluators={"qa": QAEvaluator(model_config, groundedness_threshold=4),
                                              "retrieval": RetrievalEvaluator(model_config)})
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
