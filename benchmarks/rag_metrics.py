"""RAG metrics against ragas 0.4.3 on the same fake judge server, in the same run.

The fake OpenAI-compatible server (``tests/fakes/openai_server.py``, its own process) answers after
200 ms and takes at most 64 requests at once (429 + Retry-After beyond that). N rows (default 500)
of ``faithfulness`` and ``context_recall`` are scored by touchstone's ``evaluate()`` (concurrency
64, judge cache off), then by ragas 0.4.3's ``evaluate()`` with its defaults (in its own virtual
environment, as a subprocess). Reported for each: wall time, rows/s, judge calls per row and prompt
tokens per row (touchstone: its session's accounting; ragas: counted from every HTTP response its
OpenAI client received, usage included, 429s excluded).

    python benchmarks/rag_metrics.py [--rows 500] [--ragas-python /tmp/ragasvenv/bin/python]

The server's default replies follow the requested schema (touchstone's structured output, ragas'
prompt-embedded schema), so neither tool needs format-fixing retries.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from judge_throughput import CAP, LATENCY, free_port, start_server

RAGAS_SCRIPT = r"""
import json, sys, time, types, warnings
warnings.filterwarnings("ignore")
# ragas 0.4.3 imports a module langchain-community 0.4 no longer ships; it is not used here
stub = types.ModuleType("langchain_community.chat_models.vertexai")
stub.ChatVertexAI = type("ChatVertexAI", (), {})
sys.modules.setdefault("langchain_community.chat_models.vertexai", stub)
import httpx
from langchain_openai import ChatOpenAI
from ragas import EvaluationDataset, evaluate
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import ContextRecall, Faithfulness
args = json.loads(sys.argv[1])
rows = [json.loads(line) for line in open(args["data"])]
data = EvaluationDataset.from_list([
    {"user_input": r["query"], "retrieved_contexts": [r["context"]], "response": r["response"],
     "reference": r["ground_truth"]} for r in rows
])
counts = {"calls": 0, "prompt_tokens": 0, "rate_limited": 0}
async def on_response(resp):
    if resp.status_code == 429:
        counts["rate_limited"] += 1
        return
    await resp.aread()
    counts["calls"] += 1
    try:
        counts["prompt_tokens"] += int(resp.json().get("usage", {}).get("prompt_tokens", 0))
    except Exception:
        pass
client = httpx.AsyncClient(event_hooks={"response": [on_response]}, timeout=60)
llm = LangchainLLMWrapper(ChatOpenAI(model="gpt-4o-mini", base_url=args["base_url"], api_key="sk-bench",
                                     http_async_client=client))
t = time.perf_counter()
result = evaluate(data, metrics=[Faithfulness(llm=llm), ContextRecall(llm=llm)], show_progress=False)
elapsed = time.perf_counter() - t
frame = result.to_pandas()
failed = {m: int(frame[m].isna().sum()) for m in ("faithfulness", "context_recall")}
print(json.dumps({"seconds": elapsed, "rows": len(rows), "failed": failed, **counts}))
"""


def write_data(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            hours = 10 + i % 30
            fh.write(json.dumps({
                "query": f"How long does lantern model {i} run on one charge?",
                "context": f"The lantern model {i} runs {hours} hours on high and twice that on low.",
                "response": f"Model {i} runs {hours} hours on high.",
                "ground_truth": f"Lantern model {i} runs {hours} hours on high and {2 * hours} on low.",
            }) + "\n")


def run_touchstone(base_url: str, data: Path, workdir: Path) -> dict[str, Any]:
    import openai  # noqa: F401 - imported before the clock, like ragas' packages

    from touchstone import evaluate
    from touchstone.evaluators.rag.context_recall import ContextRecallEvaluator
    from touchstone.evaluators.rag.faithfulness import FaithfulnessEvaluator

    model = {"model": "gpt-4o-mini", "base_url": base_url, "api_key": "sk-bench"}
    evs = {"faithfulness": FaithfulnessEvaluator(model), "context_recall": ContextRecallEvaluator(model)}
    t = time.perf_counter()
    result = evaluate(data=str(data), evaluators=evs, store=workdir / "runs.db", concurrency=CAP, cache=False)
    elapsed = time.perf_counter() - t
    stats = result.run.get("judge", {}).get("stats", {})
    rows = len(result.rows)
    failed = {m: result.summary[f"{m}.{m}"]["n_failed"] for m in evs}
    return {"label": "touchstone evaluate() --concurrency 64", "rows": rows, "failed": failed,
            "seconds": round(elapsed, 2), "calls": int(stats.get("calls", 0)),
            "prompt_tokens": int(stats.get("prompt_tokens", 0)),
            "rate_limited": int(stats.get("rate_limited", 0))}


def run_ragas(python: str, base_url: str, data: Path, workdir: Path) -> dict[str, Any]:
    proc = subprocess.run([python, "-c", RAGAS_SCRIPT, json.dumps({"base_url": base_url, "data": str(data)})],
                          capture_output=True, text=True, cwd=workdir, timeout=7200)
    if proc.returncode != 0:
        return {"label": "ragas 0.4.3", "error": proc.stderr[-2000:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {"label": "ragas 0.4.3 evaluate() (defaults)", "rows": out["rows"], "failed": out["failed"],
            "seconds": round(out["seconds"], 2), "calls": out["calls"], "prompt_tokens": out["prompt_tokens"],
            "rate_limited": out["rate_limited"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--ragas-python", default="/tmp/ragasvenv/bin/python")
    parser.add_argument("--skip-ragas", action="store_true")
    args = parser.parse_args()
    port = free_port()
    server = start_server(port)
    base_url = f"http://127.0.0.1:{port}/v1"
    results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            data = work / "data.jsonl"
            write_data(data, args.rows)
            results.append(run_touchstone(base_url, data, work))
            print(json.dumps(results[-1]), flush=True)
            if not args.skip_ragas and Path(args.ragas_python).exists():
                results.append(run_ragas(args.ragas_python, base_url, data, work))
                print(json.dumps(results[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(10)
    load = os.getloadavg()
    print(f"\nserver: {CAP} concurrent, {LATENCY} s per reply; "
          f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    done = [r for r in results if "seconds" in r]
    for r in done:
        r["rows_per_s"] = round(r["rows"] / r["seconds"], 2)
        print(f"{r['label']}: {r['rows']} rows x 2 metrics, failed {r['failed']}, {r['seconds']} s, "
              f"{r['rows_per_s']} rows/s, {r['calls'] / r['rows']:.2f} calls per row, "
              f"{r['prompt_tokens'] / r['rows']:.0f} prompt tokens per row, {r['rate_limited']} 429s")
    if len(done) == 2:
        print(f"touchstone / ragas throughput: {done[0]['rows_per_s'] / done[1]['rows_per_s']:.1f}x")
    for r in results:
        if "error" in r:
            print(f"{r['label']}: error\n{r['error']}")


if __name__ == "__main__":
    main()
