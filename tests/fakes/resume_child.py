"""Child process of the resume tests: runs ``evaluate()`` with the toy judge, optionally killing itself
with SIGKILL right after the judge answered one chosen row (so that reply is cached but its score is
not stored), and prints the run id and scores as JSON.

    python -m tests.fakes.resume_child '{"base_url": ..., "store": ..., "cache": ..., "data": ..., ...}'
"""

from __future__ import annotations

import json
import os
import signal
import sys
from typing import Any

from tests.fakes.judge_eval import ToyJudgeEvaluator
from touchstone import evaluate
from touchstone.scores import Outcome


def main() -> None:
    args: dict[str, Any] = json.loads(sys.argv[1])
    kill_on = args.get("kill_on")

    class KillingJudge(ToyJudgeEvaluator):
        async def _ascore(self, **inputs: Any) -> Outcome:
            out = await super()._ascore(**inputs)
            if inputs["query"] == kill_on:
                os.kill(os.getpid(), signal.SIGKILL)
            return out

    model = {"model": "fake-judge", "base_url": args["base_url"], "api_key": "sk-test-resume-key-0000000"}
    result = evaluate(
        data=args["data"],
        evaluators={"judge": KillingJudge(model)},
        store=args["store"],
        cache_path=args["cache"],
        concurrency=args.get("concurrency", 4),
        resume=args.get("resume"),
    )
    print(json.dumps({"run": result.run["id"], "rows": result.rows}), flush=True)


if __name__ == "__main__":
    main()
