"""How fast the dashboard answers on a large run: builds a run of ``--rows`` rows (100,000 by default)
with four metrics (a 0-1 score, a 1-5 rating, a 0-1 overlap score, a label) in a store, serves the
dashboard with uvicorn on a loopback port, and times each page and query over real HTTP (median,
lowest and highest of ``--repeat`` requests, after one warm-up request each).

    .venv/bin/python benchmarks/dashboard.py --rows 100000 --repeat 7 [--store PATH] [--keep]

The rows and scores are written through the store's own API (``put_rows``, ``put_scores`` with typed
score lines, ``finish_run`` with a summary), as ``evaluate()`` writes them, without scoring anything:
what is measured is the reading side.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from touchstone.scores import VALUE, ScoreLine, score_line
from touchstone.store import open_store
from touchstone.store.base import ScoreRecord, Store, StoredRow

EVALUATORS = {
    "f1": ("f1_score", 0.5),
    "coherence": ("coherence", 3.0),
    "rouge": ("rouge_recall", 0.5),
    "tone": ("tone", None),
}
WORDS = ("the", "river", "blue", "answer", "policy", "refund", "shipping", "order", "days", "Canada",
         "price", "warranty", "battery", "screen", "return", "account")


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def _value(rng: random.Random, evaluator: str) -> tuple[float | None, str | None]:
    if evaluator == "coherence":
        return float(rng.choice((1, 2, 3, 3, 4, 4, 4, 5, 5))), None
    if evaluator == "tone":
        return None, rng.choice(("neutral", "friendly", "curt"))
    return round(rng.betavariate(2, 1.5), 4), None


def _lines(
    rng: random.Random, evaluator: str, idx: int
) -> tuple[dict[str, Any], bool, tuple[ScoreLine, ...]]:
    metric, threshold = EVALUATORS[evaluator]
    if rng.random() < 0.01:  # about 1% of rows fail: a judge reply that could not be used
        return ({f"{metric}_error": "JudgeReplyError: no usable score"}, True,
                (score_line(metric, None, None, "failed", "judge_reply", None),))
    value, label = _value(rng, evaluator)
    passed = None if threshold is None or value is None else int(value >= threshold)
    outputs = {metric: value if value is not None else label, f"{metric}_reason": _text(rng, 12),
               f"{metric}_threshold": threshold}
    return outputs, False, (score_line(metric, value, label, "ok", None, passed),)


def _summary(values: dict[str, list[float]], failed: dict[str, int], rows: int) -> dict[str, Any]:
    summary = {}
    for evaluator, (metric, threshold) in EVALUATORS.items():
        xs = np.array(values[evaluator]) if values[evaluator] else np.array([])
        entry: dict[str, Any] = {"n": rows - failed[evaluator], "n_failed": failed[evaluator], "n_rows": rows,
                                 "higher_is_better": True}
        if len(xs):
            half = 1.96 * float(xs.std(ddof=1)) / math.sqrt(len(xs))
            entry.update(mean=float(xs.mean()), ci95=[float(xs.mean()) - half, float(xs.mean()) + half],
                         std=float(xs.std(ddof=1)))
            if threshold is not None:
                entry.update(pass_rate=float((xs >= threshold).mean()), n_passed=int((xs >= threshold).sum()))
        summary[f"{evaluator}.{metric}"] = entry
    return summary


def build_run(store: Store, rows: int, seed: int) -> str:
    """A finished run of ``rows`` rows and four metrics, written as ``evaluate()`` writes one."""
    rng = random.Random(seed)
    evaluators = {name: {"metric": m, "options": {"threshold": t}} for name, (m, t) in EVALUATORS.items()}
    config = {"data": "benchmark.jsonl", "n_rows": rows, "evaluation_name": "dashboard benchmark",
              "evaluators": evaluators}
    run_id = store.create_run(config, "dashboard benchmark", "bench")
    chunk = 10_000
    values: dict[str, list[float]] = {e: [] for e in EVALUATORS}
    failed = dict.fromkeys(EVALUATORS, 0)
    for start in range(0, rows, chunk):
        stop = min(rows, start + chunk)
        store.put_rows(run_id, [
            StoredRow(i, "benchmark.jsonl", i + 1, {
                "id": f"q{i}", "query": _text(rng, 10) + "?", "response": _text(rng, 40),
                "ground_truth": _text(rng, 20), "topic": rng.choice(("billing", "shipping", "returns")),
            }, None, None) for i in range(start, stop)])
        for evaluator in EVALUATORS:
            items = []
            for i in range(start, stop):
                outputs, bad, lines = _lines(rng, evaluator, i)
                items.append(ScoreRecord(i, outputs, bad, None, lines))
                if bad:
                    failed[evaluator] += 1
                elif (main := lines[0][VALUE]) is not None:
                    values[evaluator].append(main)
            store.put_scores(run_id, evaluator, items)
    status = "completed_with_failures" if any(failed.values()) else "completed"
    store.finish_run(run_id, status, {}, {"summary": _summary(values, failed, rows)})
    return run_id


def serve(store: Store) -> tuple[Any, threading.Thread, str]:
    import uvicorn

    from touchstone.ui import create_app

    server = uvicorn.Server(uvicorn.Config(create_app(store), host="127.0.0.1", port=0, log_level="warning",
                                           access_log=False))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    port = server.servers[0].sockets[0].getsockname()[1]
    return server, thread, f"http://127.0.0.1:{port}"


def time_requests(base: str, run_id: str, rows: int, repeat: int) -> list[tuple[str, str, list[float], int]]:
    run = f"/runs/{run_id}"
    cases = [
        ("run page (summary, first 50 rows)", run),
        ("run page, a deep page (offset 50% of the run)", f"{run}?page={max(1, rows // 100)}"),
        ("score range on f1 + sort by value desc, page 3", f"{run}?metric=f1.f1_score&min=0.2&max=0.6"
                                                           "&sort=-value&page=3"),
        ("failed rows (any evaluator)", f"{run}?status=failed"),
        ("coherence failed rows, sorted", f"{run}?metric=coherence.coherence&status=failed&sort=value"),
        ("not passed on rouge_recall, 200 a page", f"{run}?metric=rouge.rouge_recall&passed=no&size=200"),
        ("text search in inputs/outputs", f"{run}?q=refund+warranty+battery"),
        ("column filter (topic contains 'ship')", f"{run}?column=topic&value=ship"),
        ("rows JSON API, filtered page", f"/api/runs/{run_id}/rows?metric=f1.f1_score&min=0.9&page=2"),
        ("distributions JSON (the charts)", f"/api/runs/{run_id}/distributions"),
        ("a row's page", f"{run}/rows/{rows // 2 + 1}"),
        ("runs list", "/runs"),
        ("trend of f1_score", "/trends?metric=f1_score"),
    ]
    out = []
    with httpx.Client(base_url=base, timeout=120) as client:
        for label, url in cases:
            t0 = time.perf_counter()
            first = client.get(url)  # warm-up (and a check)
            print(f"  {label}: first request {time.perf_counter() - t0:.3f} s", flush=True)
            assert first.status_code == 200, (url, first.status_code, first.text[:300])
            times = []
            for _ in range(repeat):
                t0 = time.perf_counter()
                response = client.get(url)
                times.append(time.perf_counter() - t0)
                assert response.status_code == 200
            out.append((label, url, times, len(first.content)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="Rows in the run (default 100,000).")
    parser.add_argument("--repeat", type=int, default=7, help="Timed requests per page (median reported).")
    parser.add_argument("--store", default=None, help="Store for the run (default: a temporary file).")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="touchstone-dashboard-")
    location = args.store or str(Path(folder) / "runs.db")
    store = open_store(location)
    t0 = time.perf_counter()
    run_id = build_run(store, args.rows, args.seed)
    built = time.perf_counter() - t0
    print(f"built run {run_id}: {args.rows:,} rows x {len(EVALUATORS)} metrics in {built:.1f} s "
          f"({store.path})")
    print(f"load average before: {os.getloadavg()}")
    server, thread, base = serve(store)
    try:
        results = time_requests(base, run_id, args.rows, args.repeat)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    print(f"load average after: {os.getloadavg()}")
    print("\n| request | median ms | min / max ms | response KB |\n|---|---|---|---|")
    for label, _, times, size in results:
        print(f"| {label} | {statistics.median(times) * 1000:.0f} | {min(times) * 1000:.0f} / "
              f"{max(times) * 1000:.0f} | {size / 1024:.0f} |")
    store.close()


if __name__ == "__main__":
    main()
