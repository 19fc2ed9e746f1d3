"""Benchmark: monitor ingestion without scoring -- parse, validate, sample, assign to a window (and
keep: the pending file the monitor writes so a restart loses nothing) -- in interactions per second.

Two sources, the same interactions (SPEC 2 rows with query, response, context, ground_truth, a
timestamp over 24 hours and an id):

1. a directory of JSONL files tailed by :class:`DirectoryTail` (offsets saved);
2. the HTTP endpoint (``POST /v1/interactions``, JSONL bodies of ``--batch`` interactions) from
   ``--clients`` client threads over keep-alive connections on 127.0.0.1 (client and server share
   the machine's cores).

Rows are validated as parsed (types of the SPEC 2 fields, the timestamp) and against what the chosen
metrics need (``--metrics``, default f1_score and coherence: the row checker of ``evaluate()``), at
``--sample-rate`` (default 1: every row kept and placed). Usage::

    PYTHONPATH=src .venv/bin/python benchmarks/monitor_ingest.py [--rows 100000] [--batch 1000]
        [--clients 2] [--sample-rate 1.0] [--repeat 3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from touchstone.engine.planning import JudgeChoice, plan_evaluation
from touchstone.monitor.service import Monitor, MonitorConfig
from touchstone.monitor.sources.http import MonitorHTTPServer
from touchstone.monitor.sources.jsonl import DirectoryTail
from touchstone.monitor.state import MonitorState
from touchstone.store import RunStore

WORDS = [
    "lantern",
    "charge",
    "hours",
    "battery",
    "trail",
    "camp",
    "light",
    "beam",
    "lumen",
    "river",
    "night",
    "north",
    "pack",
    "wide",
]


def interactions(n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    base = 1_746_057_600  # 2025-05-01T00:00:00Z
    lines = []
    for i in range(n):
        ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(base + rng.randrange(86_400)))
        row = {
            "id": f"req-{i:08d}",
            "timestamp": ts,
            "query": " ".join(rng.choices(WORDS, k=12)) + "?",
            "response": " ".join(rng.choices(WORDS, k=30)),
            "context": " ".join(rng.choices(WORDS, k=60)),
            "ground_truth": " ".join(rng.choices(WORDS, k=20)),
        }
        lines.append(json.dumps(row))
    return lines


def new_monitor(work: Path, metrics: list[str], rate: float) -> Monitor:
    plan = plan_evaluation(metrics, {}, {}, judge=JudgeChoice("bench", "http://127.0.0.1:9/v1"))
    work.mkdir(parents=True, exist_ok=True)
    return Monitor(
        MonitorConfig("bench", 3600, sample_rate=rate),
        plan,
        RunStore(work / "runs.db"),
        MonitorState(work / "state"),
    )


def bench_jsonl(lines: list[str], work: Path, metrics: list[str], rate: float) -> float:
    src = work / "src"
    src.mkdir(parents=True)
    per_file = len(lines) // 4
    for k in range(4):
        (src / f"part-{k}.jsonl").write_text("\n".join(lines[k * per_file : (k + 1) * per_file]) + "\n")
    monitor = new_monitor(work, metrics, rate)
    tail = DirectoryTail(src)
    t0 = time.perf_counter()
    monitor.tail(tail)
    elapsed = time.perf_counter() - t0
    assert monitor.counts["received"] == per_file * 4 and monitor.counts["invalid"] == 0
    return monitor.counts["received"] / elapsed


def _client(url_port: int, bodies: list[bytes], errors: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", url_port, timeout=60)
    for body in bodies:
        conn.request("POST", "/v1/interactions", body, {"Content-Type": "application/x-ndjson"})
        reply = conn.getresponse()
        reply.read()
        if reply.status != 200:
            errors.append(str(reply.status))
    conn.close()


def bench_http(
    lines: list[str], work: Path, metrics: list[str], rate: float, batch: int, clients: int
) -> float:
    monitor = new_monitor(work, metrics, rate)
    server = MonitorHTTPServer(monitor).start()
    port = int(server.server_address[1])
    bodies = [("\n".join(lines[i : i + batch]) + "\n").encode() for i in range(0, len(lines), batch)]
    errors: list[str] = []
    threads = [
        threading.Thread(target=_client, args=(port, bodies[k::clients], errors)) for k in range(clients)
    ]
    t0 = time.perf_counter()
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    elapsed = time.perf_counter() - t0
    server.stop()
    assert not errors and monitor.counts["received"] == len(lines), (errors, monitor.counts)
    return len(lines) / elapsed


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--clients", type=int, default=2)
    ap.add_argument("--sample-rate", type=float, default=1.0)
    ap.add_argument("--metrics", default="f1_score,coherence")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    metrics = args.metrics.split(",")
    lines = interactions(args.rows)
    results: dict[str, Any] = {
        "rows": args.rows,
        "metrics": metrics,
        "sample_rate": args.sample_rate,
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
    }
    for name in ("jsonl", "http"):
        rates = []
        for r in range(args.repeat):
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp) / f"{name}-{r}"
                if name == "jsonl":
                    rates.append(bench_jsonl(lines, work, metrics, args.sample_rate))
                else:
                    rates.append(bench_http(lines, work, metrics, args.sample_rate, args.batch, args.clients))
        results[name] = {
            "per_s": [round(x) for x in rates],
            "best": round(max(rates)),
            "median": round(sorted(rates)[len(rates) // 2]),
        }
        print(
            f"{name}: {results[name]['median']:,} interactions/s median (best {results[name]['best']:,}) "
            f"over {args.repeat} runs of {args.rows:,}",
            flush=True,
        )
    results["loadavg"] = os.getloadavg()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
