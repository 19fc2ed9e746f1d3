# mypy: ignore-errors
"""evaluate() with a conversation column: per-turn results inside the rows."""
import json
import os
import tempfile
from pathlib import Path

from azure.ai.evaluation import FluencyEvaluator, evaluate

from _emit import emit

model_config = {"type": "openai", "model": "gpt-4o", "base_url": os.environ["COMPAT_BASE_URL"], "api_key": os.environ["COMPAT_API_KEY"]}
tmp = tempfile.mkdtemp()
data = Path(tmp) / "chats.jsonl"
conversations = [
    {"conversation": {"messages": [{"role": "user", "content": "Hi"},
                                   {"role": "assistant", "content": "Hello, how can I help? [J5]"}]}},
    {"conversation": {"messages": [{"role": "user", "content": "Price?"},
                                   {"role": "assistant", "content": "Cost it ten. [J2]"},
                                   {"role": "user", "content": "Euros?"},
                                   {"role": "assistant", "content": "Yes, ten euros. [J4]"}]}},
]
data.write_text("".join(json.dumps(c) + "\n" for c in conversations))
result = evaluate(data=str(data), evaluators={"fluency": FluencyEvaluator(model_config)})
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
