"""Scale: many rows locally and through the Ray executor.

Three scenarios, each run in its own process while this one samples the resident memory of that
process and all its descendants (pool workers, a Ray cluster the run started) every 0.2 s:

* ``local``: ``--rows`` rows of f1_score, exact_match and bleu_score with ``evaluate()`` (process pool);
* ``ray``: the same through ``executor="ray"`` on a local cluster of ``--ray-cpus`` CPUs started by
  the run (its raylet, GCS and workers are in the measured tree);
* ``judge``: ``--judge-rows`` rows of groundedness on the fake server (its own process, not measured;
  200 ms a reply, 64 at once, 429 beyond: capacity 320 calls/s) through the Ray executor with two
  judge workers: the share of the server's capacity used, and its 429s.

    PYTHONPATH=src:. .venv/bin/python benchmarks/scale.py [--rows 1000000] [--judge-rows 100000]
        [--scenarios local,ray,judge]

Prints one JSON line per scenario: seconds, rows/s, peak RSS of the tree (MiB), and for the judge the
calls, 429s and share of capacity.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LATENCY = 0.2
CAP = 64
CAPACITY = CAP / LATENCY

CHILD = r"""
import json, os, random, sys, time
args = json.loads(sys.argv[1])
from touchstone import BleuScoreEvaluator, ExactMatchEvaluator, F1ScoreEvaluator, evaluate

def text_rows(n):
    rng = random.Random(1)
    words = "the cat sat on a mat dog ran far blue sky red fox jumps over lazy".split()
    for i in range(n):
        truth = " ".join(rng.choices(words, k=rng.randint(3, 14)))
        response = truth if rng.random() < 0.2 else " ".join(rng.choices(words, k=rng.randint(3, 14)))
        yield {"response": response, "ground_truth": truth}

kind = args["scenario"]
executor = None
if kind in ("ray", "judge"):
    import ray
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=args["ray_cpus"], include_dashboard=False, log_to_driver=False)
    executor = "ray"
if kind == "judge":
    from touchstone import GroundednessEvaluator
    cfg = {"model": "gpt-4o-mini", "base_url": args["base_url"], "api_key": "sk-bench"}
    data = [{"query": f"What is item {i}?", "response": f"Item {i} is a blue box.",
             "context": f"Item {i} is a blue box kept on shelf {i % 40}."} for i in range(args["rows"])]
    evs = {"groundedness": GroundednessEvaluator(cfg)}
    options = {"cache": False, "concurrency": 128}
else:
    evs = {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator(), "bleu": BleuScoreEvaluator()}
    options = {}
    if kind == "local":  # from a JSONL file, which the run streams (benchmarks/scale_local.py: PSS too)
        data = args["store"] + ".rows.jsonl"
        with open(data, "w", encoding="utf-8") as fh:
            for row in text_rows(args["rows"]):
                fh.write(json.dumps(row) + "\n")
    else:
        data = list(text_rows(args["rows"]))
started = time.perf_counter()
result = evaluate(data=data, evaluators=evs, store=args["store"], executor=executor, **options)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "rows": len(result.rows), "failed": result.n_failed,
                  "metrics": {k: v for k, v in result.metrics.items() if isinstance(v, float)},
                  "judge_stats": (result.run.get("judge") or {}).get("stats")}))
"""


def tree_rss(root: int) -> int:
    """Resident bytes of ``root`` and its descendants."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            parents[int(entry.name)] = int(fields[1])
            rss[int(entry.name)] = int(fields[21]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            continue
    members, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in members:
                members.add(child)
                frontier.append(child)
    return sum(rss.get(pid, 0) for pid in members)


def measured(args: dict[str, Any]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}", "RAY_AUTH_MODE": "disabled",
           "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    peak = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not done.is_set():
            peak = max(peak, tree_rss(proc.pid))
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out, err = proc.communicate()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{args['scenario']} failed:\n{err[-3000:]}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result.update(scenario=args["scenario"], peak_rss_mib=round(peak / 2**20, 1),
                  rows_per_s=round(result["rows"] / result["seconds"], 1),
                  seconds=round(result["seconds"], 2))
    return result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


SERVER = r"""
import asyncio, json, signal, sys
from tests.fakes.openai_server import FakeOpenAIServer
args = json.loads(sys.argv[1])
server = FakeOpenAIServer(port=args["port"], latency=args["latency"], max_concurrency=args["cap"],
                          retry_after=0.05)

async def run():
    task = asyncio.ensure_future(server.serve_forever())
    while server._server is None:
        await asyncio.sleep(0.01)
    print("ready", flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    print(json.dumps({"requests": len(server.requests), "max_active": server.max_active,
                      "rejected_429": server.rejected_busy}), flush=True)
    task.cancel()

asyncio.run(run())
"""


def judge(rows: int, cpus: int, store: str) -> dict[str, Any]:
    """The judge scenario against a fake server in its own process, which reports the most requests
    it had in flight at once and how many it refused with 429 (over its cap)."""
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, json.dumps({"port": port, "latency": LATENCY, "cap": CAP})],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONPATH": f"{ROOT / 'src'}:{ROOT}"},
    )
    try:
        assert server.stdout is not None
        server.stdout.readline()  # "ready"
        result = measured({"scenario": "judge", "rows": rows, "ray_cpus": cpus, "store": store,
                           "base_url": f"http://127.0.0.1:{port}/v1"})
    finally:
        server.terminate()
        out, _ = server.communicate(timeout=30)
    stats = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    result["server"] = {**stats, "cap": CAP}
    calls_per_s = result["rows"] / result["seconds"]  # one call per row for groundedness
    result["share_of_capacity"] = round(calls_per_s / CAPACITY, 3)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--judge-rows", type=int, default=100_000)
    parser.add_argument("--ray-cpus", type=int, default=2)
    parser.add_argument("--scenarios", default="local,ray,judge")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in args.scenarios.split(","):
            store = str(Path(tmp) / f"{scenario}.db")
            if scenario == "judge":
                result = judge(args.judge_rows, args.ray_cpus, store)
            else:
                result = measured({"scenario": scenario, "rows": args.rows, "ray_cpus": args.ray_cpus,
                                   "store": store})
            result["load_average"] = os.getloadavg()
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
