# mypy: ignore-errors
"""evaluate() with several lexical evaluators: the metrics dict (several *_result columns per
evaluator, binary_aggregate), data given as a Path, evaluator_config with ${data.*} mappings."""
import json
import tempfile
from pathlib import Path

from azure.ai.evaluation import BleuScoreEvaluator, F1ScoreEvaluator, RougeScoreEvaluator, RougeType, evaluate

from _emit import emit

tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.jsonl"
rows = [{"answer": "The cat sat on the mat.", "truth": "A cat sat on the mat."},
        {"answer": "Paris is the capital of France.", "truth": "The capital of France is Paris."},
        {"answer": "no idea", "truth": "The answer is 42."}]
data.write_text("".join(json.dumps(r) + "\n" for r in rows))
mapping = {"column_mapping": {"response": "${data.answer}", "ground_truth": "${data.truth}"}}
result = evaluate(
    data=data,
    evaluators={"rouge": RougeScoreEvaluator(RougeType.ROUGE_L, precision_threshold=0.9),
                "bleu": BleuScoreEvaluator(), "f1": F1ScoreEvaluator()},
    evaluator_config={"rouge": mapping, "bleu": mapping, "f1": mapping},
)
emit({"rows": result["rows"], "metrics": result["metrics"]}, tmp)
