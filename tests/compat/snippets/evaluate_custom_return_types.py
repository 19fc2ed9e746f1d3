# mypy: ignore-errors
"""evaluate() with custom evaluators returning other than a number: bool, text, None, a list, a
dataclass, and a dict whose values are ints on some rows and floats on others."""
import dataclasses
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import evaluate

from _emit import emit


def is_short(response):
    return len(response) < 10


def first_word(response):
    return response.split()[0] if response.split() else None


def tokens(response):
    return response.split()


@dataclasses.dataclass
class Verdict:
    ok: bool
    length: int


def verdict(response):
    return Verdict(ok=len(response) > 3, length=len(response))


def mixed(response):
    return {"score": len(response) if len(response) % 2 else len(response) / 4, "passed": len(response) > 5}


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"response": "hi there"}, {"response": "a longer answer here"}, {"response": "odd"}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
result = evaluate(
    data=str(data),
    evaluators={"short": is_short, "first": first_word, "tokens": tokens, "verdict": verdict, "mixed": mixed},
)
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
