"""ContentSafetyEvaluator throughput against the rate-capped fake judge: one call per row against four.

The fake OpenAI-compatible server (``tests/fakes/openai_server.py``, its own process) answers after
200 ms and takes at most 64 requests at once (429 + Retry-After beyond that): 64 / 0.2 s = 320 calls/s.
Its default reply fills the requested JSON schema, so both modes get valid severities. We score the
same N rows with ``evaluate()`` at ``concurrency`` 64 (cache off), first with ``one_call=True`` (all
four severities in one structured reply), then with the four calls per row the compatible SDK makes,
and report seconds, judge calls per row, calls/s and the share of the server's capacity used. A
20-row run of each mode first warms the process (lazy imports); it is not reported. Each mode is
measured three ways (see ``touchstone.judges.known_servers``): against a server *never met* (what
this process and the shared file knew of it forgotten first: one contact probe, structured output
negotiated), as a *new process* meets a server met before (this process's memory forgotten, the
shared file kept: no probe), and *warm* (a later run in the same process). The shared file is a
temporary one (``TOUCHSTONE_SERVERS``), never the user's.

    python benchmarks/safety_throughput.py [--rows 1000] [--transport aiohttp]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from judge_throughput import CAP, CAPACITY, LATENCY, free_port, start_server  # noqa: E402


def write_data(path: Path, n: int) -> None:
    with path.open("w") as fh:
        for i in range(n):
            fh.write(
                json.dumps(
                    {
                        "query": f"Tell me about the history of castle number {i}.",
                        "response": f"Castle {i} was built in {1100 + i % 700} and besieged twice; "
                        "it is now a museum.",
                    }
                )
                + "\n"
            )


SCENARIOS = {
    "never": "a server never met",
    "process": "a new process, server met before",
    "warm": "warm",
}


def run(
    base_url: str, data: Path, one_call: bool, work: Path, transport: str, concurrency: int, *,
    scenario: str = "warm",
) -> dict[str, Any]:
    import openai  # noqa: F401 - imported before the clock

    from touchstone import ContentSafetyEvaluator, evaluate
    from touchstone.judges import known_servers

    if scenario != "warm":  # "never": one contact probe, structured output negotiated
        known_servers.forget_all(disk=scenario == "never")

    model = {"model": "gpt-4o-mini", "base_url": base_url, "api_key": "sk-bench"}
    ev = ContentSafetyEvaluator(model, one_call=one_call)
    work.mkdir(exist_ok=True)
    t = time.perf_counter()
    result = evaluate(
        data=str(data),
        evaluators={"content_safety": ev},
        store=work / f"runs-{one_call}-{scenario}.db",
        concurrency=concurrency,
        cache=False,
        http_transport=transport,
    )
    elapsed = time.perf_counter() - t
    judge = result.run.get("judge", {})
    stats = judge.get("stats", {})
    rows = len(result.rows)
    calls = int(stats.get("calls", 0) or 0)
    return {
        "label": f"ContentSafetyEvaluator one_call={one_call} ({SCENARIOS[scenario]})",
        "rows": rows,
        "failed": result.n_failed,
        "seconds": round(elapsed, 2),
        "calls": calls,
        "calls_per_row": round(calls / rows, 3) if rows else None,
        "rows_per_s": round(rows / elapsed, 1),
        "calls_per_s": round(calls / elapsed, 1),
        "share_of_capacity": round(calls / elapsed / CAPACITY, 3),
        "rate_limited_429": int(stats.get("rate_limited", 0)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--transport", default="aiohttp")
    parser.add_argument("--concurrency", type=int, default=CAP)
    args = parser.parse_args()

    os.environ["TOUCHSTONE_SERVERS"] = str(Path(tempfile.mkdtemp()) / "servers.json")
    port = free_port()
    server = start_server(port)
    base_url = f"http://127.0.0.1:{port}/v1"
    results: list[dict[str, Any]] = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            data = work / "data.jsonl"
            write_data(data, args.rows)
            # warm-up (not reported): the first evaluate() of a process imports the HTTP stack, the
            # engine and the store lazily (about a second on this VM), which is not throughput
            warm = work / "warm.jsonl"
            write_data(warm, 20)
            for one_call in (True, False):
                run(base_url, warm, one_call, work / "warm", args.transport, args.concurrency)
            for one_call in (True, False):
                for scenario in SCENARIOS:
                    results.append(run(base_url, data, one_call, work, args.transport, args.concurrency,
                                       scenario=scenario))
                    print(json.dumps(results[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(10)

    print(
        f"\nserver capacity: {CAP} concurrent / {LATENCY} s = {CAPACITY:.0f} calls/s; "
        f"load average {os.getloadavg()[0]:.2f}"
    )
    for r in results:
        print(
            f"{r['label']}: {r['rows']} rows, {r['failed']} failed, {r['seconds']} s, "
            f"{r['calls_per_row']} calls/row, {r['rows_per_s']} rows/s, {r['calls_per_s']} calls/s "
            f"= {100 * r['share_of_capacity']:.1f}% of capacity"
        )
    if len(results) == 6 and results[2]["seconds"]:
        ratio = results[5]["seconds"] / results[2]["seconds"]
        print(f"one call per row is {ratio:.2f}x faster per row (warm)")


if __name__ == "__main__":
    main()
