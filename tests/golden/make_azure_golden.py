"""How tests/golden/azure_f1_evaluate.json was produced (run in a venv with azure-ai-evaluation 1.18):

    python tests/golden/make_azure_golden.py

It is the compatible SDK's own evaluate() output for two rows, kept so the shape test does not need
the SDK installed. Not part of the test run.
"""

import json
from pathlib import Path

if __name__ == "__main__":
    from azure.ai.evaluation import F1ScoreEvaluator, evaluate

    rows = [
        {"response": "the cat sat", "ground_truth": "a cat sat", "extra": 1},
        {"response": "dog", "ground_truth": "cat", "extra": 2},
    ]
    data = Path("/tmp/az_in.jsonl")
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = Path(__file__).with_name("azure_f1_evaluate.json")
    evaluate(data=str(data), evaluators={"f1": F1ScoreEvaluator()}, output_path=str(out))
