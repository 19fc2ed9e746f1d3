# mypy: ignore-errors
"""evaluate() over a CSV file (an empty cell, a numeric column), with the keyword arguments SDK users
pass along: evaluation_name, tags, _use_pf_client / _use_run_submitter_client."""
import tempfile
from pathlib import Path

from azure.ai.evaluation import F1ScoreEvaluator, evaluate

from _emit import emit


def size(response, ground_truth, rank):
    return {"chars": len(response), "rank_text": rank}


tmp = tempfile.mkdtemp()
data = Path(tmp) / "data.csv"
data.write_text("response,ground_truth,rank,comment\nred apple,a red apple,1,\ngreen pear,pear,2,fine\n")
result = evaluate(
    data=str(data),
    evaluators={"f1": F1ScoreEvaluator(), "size": size},
    evaluation_name="csv run",
    tags={"team": "qa"},
    _use_pf_client=False,
    _use_run_submitter_client=True,
)
emit({"rows": result["rows"], "metrics": result["metrics"], "studio_url": result["studio_url"]}, tmp)
