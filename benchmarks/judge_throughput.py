"""Judge throughput against a rate-capped fake server.

The fake OpenAI-compatible server (``tests/fakes/openai_server.py``, its own process) answers after
200 ms and takes at most 64 requests at once (429 + Retry-After beyond that): its capacity is
64 / 0.2 s = 320 calls/s. We score N rows of one judge metric (groundedness) with touchstone's
``evaluate()`` at ``concurrency`` 64 and 128 (over the cap: the adaptive limit must find it, and no
row may fail), then the compatible SDK's ``GroundednessEvaluator`` through its own ``evaluate()``
(``azure-ai-evaluation``, run in its own virtual environment), pointed at the same server.

    python benchmarks/judge_throughput.py [--rows 2000] [--sdk-rows 300]
        [--azure-python /tmp/azvenv/bin/python] [--transports aiohttp,httpx]

Each tool's packages are imported before its clock starts (the SDK script imports
``azure.ai.evaluation`` first; here ``touchstone`` and ``openai``): the figures are the run, not
the one-off import of the ``openai`` package (about 0.35 s per process).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LATENCY = 0.2
CAP = 64
CAPACITY = CAP / LATENCY

SDK_SCRIPT = r"""
import json, sys, time, os
from azure.ai.evaluation import GroundednessEvaluator, OpenAIModelConfiguration, evaluate
args = json.loads(sys.argv[1])
cfg = OpenAIModelConfiguration(
    type="openai", model="gpt-4o-mini", base_url=args["base_url"], api_key="sk-bench"
)
ev = GroundednessEvaluator(model_config=cfg)
t = time.perf_counter()
res = evaluate(data=args["data"], evaluators={"groundedness": ev}, output_path=args["out"])
elapsed = time.perf_counter() - t
rows = res["rows"]
failed = sum(1 for r in rows if r.get("outputs.groundedness.groundedness") is None)
print(json.dumps({"seconds": elapsed, "rows": len(rows), "failed": failed}))
"""


RAGAS_SCRIPT = r"""
import json, sys, time, warnings
warnings.filterwarnings("ignore")
from langchain_openai import ChatOpenAI
from ragas import EvaluationDataset, evaluate
from ragas.llms import LangchainLLMWrapper
from ragas.metrics import Faithfulness
args = json.loads(sys.argv[1])
rows = [json.loads(line) for line in open(args["data"])]
data = EvaluationDataset.from_list([
    {"user_input": r["query"], "retrieved_contexts": [r["context"]], "response": r["response"]} for r in rows
])
llm = LangchainLLMWrapper(ChatOpenAI(model="gpt-4o-mini", base_url=args["base_url"], api_key="sk-bench"))
t = time.perf_counter()
result = evaluate(data, metrics=[Faithfulness(llm=llm)], show_progress=False)
elapsed = time.perf_counter() - t
scores = result.to_pandas()["faithfulness"]
print(json.dumps({"seconds": elapsed, "rows": len(rows), "failed": int(scores.isna().sum())}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.openai_server", "--port", str(port), "--latency", str(LATENCY),
         "--max-concurrency", str(CAP), "--retry-after", "0.05"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return proc
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise RuntimeError("the fake server did not start")


def write_data(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(json.dumps({
                "query": f"How long does lantern model {i} run on one charge?",
                "context": f"The lantern model {i} runs {10 + i % 30} hours on high and twice that on low.",
                "response": f"Model {i} runs {10 + i % 30} hours on high.",
            }) + "\n")


def run_touchstone(
    base_url: str, data: Path, concurrency: int, workdir: Path, transport: str
) -> dict[str, Any]:
    import openai  # noqa: F401 - imported before the clock, like the SDK's packages

    from touchstone import evaluate
    from touchstone.evaluators import registry

    model = {"model": "gpt-4o-mini", "base_url": base_url, "api_key": "sk-bench"}
    ev = registry.create("groundedness", model_config=model)
    t = time.perf_counter()
    result = evaluate(
        data=str(data), evaluators={"groundedness": ev}, store=workdir / f"runs-{concurrency}-{transport}.db",
        concurrency=concurrency, cache=False, http_transport=transport,
    )
    elapsed = time.perf_counter() - t
    judge = result.run.get("judge", {})
    stats = judge.get("stats", {})
    model_info = (judge.get("models") or [{}])[0]
    rows = len(result.rows)
    return {
        "label": f"touchstone --concurrency {concurrency} ({model_info.get('http_transport', transport)})",
        "rows": rows,
        "failed": result.n_failed,
        "seconds": round(elapsed, 2),
        "calls_per_s": round(rows / elapsed, 1),
        "share_of_capacity": round(rows / elapsed / CAPACITY, 3),
        "rate_limited_429": int(stats.get("rate_limited", 0)),
        "concurrency_final": model_info.get("concurrency_final"),
        "concurrency_min": model_info.get("concurrency_min"),
    }


def client_cpu_per_call(base_url: str, transport: str, calls: int = 2000) -> dict[str, Any]:
    """Client CPU per judge call: ``calls`` chats, 64 in flight, through the judge session alone
    (no evaluate()), measured with ``time.process_time()`` in this process."""
    import asyncio

    from touchstone.judges import JudgeSettings, OpenAIModelConfiguration, get_judge_client, judge_session

    cfg = OpenAIModelConfiguration(model="gpt-4o-mini", api_key="sk-bench", base_url=base_url)

    async def run() -> tuple[float, float]:
        async with judge_session(JudgeSettings(concurrency=CAP, cache=False, http_transport=transport)):
            client = get_judge_client(cfg)
            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.gather(
                *(
                    client.chat([{"role": "user", "content": f"QUERY: q{i}\nRESPONSE: r{i}"}])
                    for i in range(calls)
                )
            )
            return time.process_time() - cpu, time.perf_counter() - wall

    cpu, wall = asyncio.run(run())
    return {"label": f"client CPU per call ({transport})", "ms_cpu_per_call": round(1000 * cpu / calls, 3),
            "share_of_capacity": round(calls / wall / CAPACITY, 3)}


def run_sdk(python: str, base_url: str, data: Path, workdir: Path) -> dict[str, Any]:
    args = {"base_url": base_url, "data": str(data), "out": str(workdir / "sdk.json")}
    proc = subprocess.run([python, "-c", SDK_SCRIPT, json.dumps(args)], capture_output=True, text=True,
                          cwd=workdir, timeout=3600)
    if proc.returncode != 0:
        return {"label": "azure-ai-evaluation", "error": proc.stderr[-2000:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    return {
        "label": "azure-ai-evaluation GroundednessEvaluator + evaluate()",
        "rows": out["rows"],
        "failed": out["failed"],
        "seconds": round(out["seconds"], 2),
        "calls_per_s": round(out["rows"] / out["seconds"], 1),
        "share_of_capacity": round(out["rows"] / out["seconds"] / CAPACITY, 3),
    }


def run_ragas(python: str, base_url: str, data: Path, workdir: Path) -> dict[str, Any]:
    """ragas' faithfulness (two calls per row: statements, then verdicts) through its own
    ``evaluate()`` with its default settings. The fake server answers its prompt-embedded JSON
    schemas, so no reply needs ragas' format-fixing retries."""
    args = {"base_url": base_url, "data": str(data)}
    proc = subprocess.run([python, "-c", RAGAS_SCRIPT, json.dumps(args)], capture_output=True, text=True,
                          cwd=workdir, timeout=3600)
    if proc.returncode != 0:
        return {"label": "ragas", "error": proc.stderr[-2000:]}
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    calls = 2 * out["rows"]
    return {
        "label": "ragas faithfulness + evaluate() (2 calls per row)",
        "rows": out["rows"],
        "failed": out["failed"],
        "seconds": round(out["seconds"], 2),
        "calls_per_s": round(calls / out["seconds"], 1),
        "share_of_capacity": round(calls / out["seconds"] / CAPACITY, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument(
        "--sdk-rows", type=int, default=300, help="rows for the compatible SDK (it is slower)"
    )
    parser.add_argument("--azure-python", default="/tmp/azvenv/bin/python")
    parser.add_argument("--skip-sdk", action="store_true")
    parser.add_argument("--ragas-python", default="/tmp/ragasvenv/bin/python",
                        help="a Python with ragas and langchain-openai (skipped when absent)")
    parser.add_argument("--ragas-rows", type=int, default=300)
    parser.add_argument("--transports", default="aiohttp,httpx",
                        help="HTTP stacks under the openai client to measure (comma-separated)")
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
            for transport in args.transports.split(","):
                for concurrency in (64, 128):
                    results.append(run_touchstone(base_url, data, concurrency, work, transport.strip()))
                    print(json.dumps(results[-1]), flush=True)
            for transport in args.transports.split(","):
                cpu = client_cpu_per_call(base_url, transport.strip())
                print(json.dumps(cpu), flush=True)
                results.append(cpu)
            if not args.skip_sdk and Path(args.azure_python).exists():
                sdk_data = work / "sdk.jsonl"
                write_data(sdk_data, args.sdk_rows)
                results.append(run_sdk(args.azure_python, base_url, sdk_data, work))
                print(json.dumps(results[-1]), flush=True)
            if not args.skip_sdk and Path(args.ragas_python).exists():
                ragas_data = work / "ragas.jsonl"
                write_data(ragas_data, args.ragas_rows)
                results.append(run_ragas(args.ragas_python, base_url, ragas_data, work))
                print(json.dumps(results[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(10)

    print(f"\nserver capacity: {CAP} concurrent / {LATENCY} s = {CAPACITY:.0f} calls/s")
    sdk = next((r for r in results if r["label"].startswith("azure") and "calls_per_s" in r), None)
    ragas = next((r for r in results if r["label"].startswith("ragas") and "calls_per_s" in r), None)
    for r in results:
        if "ms_cpu_per_call" in r:
            print(f"{r['label']}: {r['ms_cpu_per_call']} ms (judge session alone: "
                  f"{100 * r['share_of_capacity']:.1f}% of capacity)")
            continue
        if "calls_per_s" not in r:
            print(f"{r['label']}: error\n{r.get('error')}")
            continue
        ratio = f", {r['calls_per_s'] / sdk['calls_per_s']:.1f}x the SDK" if sdk and r is not sdk else ""
        if ragas and r["label"].startswith("touchstone"):
            ratio += f", {r['calls_per_s'] / ragas['calls_per_s']:.1f}x ragas (calls/s)"
        print(f"{r['label']}: {r['rows']} rows, {r['failed']} failed, {r['seconds']} s, "
              f"{r['calls_per_s']} calls/s = {100 * r['share_of_capacity']:.1f}% of capacity{ratio}")


if __name__ == "__main__":
    main()
