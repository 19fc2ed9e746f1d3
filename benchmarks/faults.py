"""Throughput under judge faults: 500 rows x 2 judge metrics, fault-free against 30% faulty requests.

The fake OpenAI-compatible server (``tests/fakes/openai_server.py``, in its own process) answers after
``--latency`` seconds. In the faulty runs a share ``--fault-rate`` of the distinct request bodies fail
on their first attempt with a kind drawn from 429 (Retry-After 50 ms), 500, 502, 503, a dropped
connection, a malformed body and a *hang* (the server holds the request ``--hang`` seconds, then
closes the connection without a reply). Hangs are over-represented (``--hang-share`` of the faults) so
the run meets many of them. touchstone scores coherence and fluency (``evaluate()``, cache off) with
the per-request ``--timeout``; a hang is abandoned at that timeout (or when the connection closes,
whichever is first) and asked again without holding up the other rows.

    python benchmarks/faults.py [--rows 500] [--fault-rate 0.3] [--hang 3] [--timeout 60]

The goal (issue 12): the faulty run takes at most 3x the fault-free one, and no row fails.
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

SERVER = r"""
import asyncio, json, sys
sys.path.insert(0, {root!r})
from tests.fakes.openai_server import FakeOpenAIServer, FaultPlan
args = json.loads(sys.argv[1])
hang_share = args["hang_share"]
others = ("429", "500", "502", "503", "drop", "malformed")
n_hang = max(1, round(hang_share * 20))
kinds = ("hang",) * n_hang + others * max(1, round((20 - n_hang) / len(others)))
server = FakeOpenAIServer(port=args["port"], latency=args["latency"], hang_seconds=args["hang"],
                          faults=FaultPlan(rate=args["rate"], kinds=kinds, seed=7))
async def run():
    await server.serve_forever()
asyncio.run(run())
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(port: int, **options: Any) -> subprocess.Popen[bytes]:
    args = json.dumps({"port": port, **options})
    proc = subprocess.Popen([sys.executable, "-c", SERVER.format(root=str(ROOT)), args], cwd=ROOT,
                            stdout=subprocess.DEVNULL)
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
                "response": f"Model {i} runs {10 + i % 30} hours on high and twice that on low.",
            }) + "\n")


def run_touchstone(
    base_url: str, data: Path, store: Path, timeout: float, concurrency: int
) -> dict[str, Any]:
    import openai  # noqa: F401 - imported before the clock

    from touchstone import evaluate
    from touchstone.evaluators import registry

    model = {"model": "gpt-4o-mini", "base_url": base_url, "api_key": "sk-bench"}
    evs = {name: registry.create(name, model_config=model) for name in ("coherence", "fluency")}
    t = time.perf_counter()
    result = evaluate(data=str(data), evaluators=evs, store=store, cache=False, timeout=timeout,
                      concurrency=concurrency)
    elapsed = time.perf_counter() - t
    judge = result.run.get("judge", {})
    stats = judge.get("stats", {})
    info = (judge.get("models") or [{}])[0]
    return {
        "seconds": round(elapsed, 2),
        "rows": len(result.rows),
        "failed_scores": result.n_failed,
        "calls": int(stats.get("calls", 0)),
        "retries": int(stats.get("retries", 0)),
        "rate_limited": int(stats.get("rate_limited", 0)),
        "concurrency_min": info.get("concurrency_min"),
        "concurrency_decreases": info.get("concurrency_decreases"),
    }


def measure(rows: int, rate: float, hang: float, hang_share: float, latency: float, timeout: float,
            concurrency: int) -> dict[str, Any]:
    port = free_port()
    server = start_server(port, latency=latency, hang=hang, rate=rate, hang_share=hang_share)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp) / "data.jsonl"
            write_data(data, rows)
            out = run_touchstone(f"http://127.0.0.1:{port}/v1", data, Path(tmp) / "runs.db", timeout,
                                 concurrency)
    finally:
        server.terminate()
        server.wait(10)
    return {"fault_rate": rate, **out}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=500)
    parser.add_argument("--fault-rate", type=float, default=0.3)
    parser.add_argument("--hang", type=float, default=3.0, help="seconds a hung request is held")
    parser.add_argument("--hang-share", type=float, default=0.25, help="share of the faults that are hangs")
    parser.add_argument("--latency", type=float, default=0.05, help="seconds per answered request")
    parser.add_argument("--timeout", type=float, default=60.0, help="per-request timeout (default 60)")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--extra-rate", type=float, action="append", default=[],
                        help="also measure this fault rate (repeatable), e.g. 0.6")
    args = parser.parse_args()
    os.environ.setdefault("TOUCHSTONE_STORE", ":memory:")
    load = os.getloadavg()
    results = [
        measure(args.rows, 0.0, args.hang, args.hang_share, args.latency, args.timeout, args.concurrency)
    ]
    print(json.dumps(results[-1]), flush=True)
    for rate in (args.fault_rate, *args.extra_rate):
        results.append(measure(args.rows, rate, args.hang, args.hang_share, args.latency, args.timeout,
                               args.concurrency))
        print(json.dumps(results[-1]), flush=True)
    base = results[0]["seconds"]
    print(f"\nload average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    for r in results:
        ratio = r["seconds"] / base
        print(f"fault rate {r['fault_rate']:.0%}: {r['seconds']:.2f} s ({ratio:.2f}x fault-free), "
              f"{r['failed_scores']} failed scores, {r['calls']} calls, {r['retries']} retries, "
              f"concurrency min {r['concurrency_min']} ({r['concurrency_decreases']} decreases)")


if __name__ == "__main__":
    main()
