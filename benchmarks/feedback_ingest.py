"""How many feedback events ``POST /api/feedback`` takes per second on loopback, and that none is
lost: the web app (uvicorn, one worker process) over a SQLite store (or ``--store`` a PostgreSQL
URL), ``--clients`` client threads each on one keep-alive connection, ``--events`` events in all,
one event per request (``--batch 1``, the worst case) or ``--batch`` events per request. The events
name interactions of a stored run (its rows' ``id``); afterwards every event is counted in the store
and joined back to its row (``run_feedback``).

    .venv/bin/python benchmarks/feedback_ingest.py --events 5000 --clients 8 --batch 1
    .venv/bin/python benchmarks/feedback_ingest.py --events 50000 --clients 4 --batch 100
"""

from __future__ import annotations

import argparse
import http.client
import json
import multiprocessing
import os
import socket
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from touchstone.people.feedback import feedback_for, run_feedback
from touchstone.store import open_store
from touchstone.store.base import StoredRow

KINDS = ("thumbs_up", "thumbs_down", "rating", "session_length", "error_report", "task_completion")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serve(where: str, port: int, token: str, http: str, loop: str) -> None:
    import uvicorn

    from touchstone.ui import create_app

    store = open_store(where)
    uvicorn.run(create_app(store, feedback_token=token), host="127.0.0.1", port=port, log_level="warning",
                access_log=False, http=http, loop=loop)


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (Linux ``/proc``; 0 elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _stack(http: str, loop: str) -> str:
    """What uvicorn picks for ``auto``: httptools and uvloop when installed."""
    import importlib.util

    if http == "auto":
        http = "httptools" if importlib.util.find_spec("httptools") else "h11"
    if loop == "auto":
        loop = "uvloop" if importlib.util.find_spec("uvloop") else "asyncio"
    return f"{http}/{loop}"


def _event(i: int, n_rows: int) -> dict[str, Any]:
    kind = KINDS[i % len(KINDS)]
    event: dict[str, Any] = {"interaction_id": f"i{i % n_rows}", "kind": kind, "session_id": f"s{i}"}
    if kind == "rating":
        event["value"] = 1 + i % 5
    elif kind == "session_length":
        event["value"] = i % 600
    elif kind == "error_report":
        event["text"] = f"wrong answer number {i}"
    return event


def _client(port: int, token: str, bodies: list[bytes], failures: list[str]) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    for body in bodies:
        conn.request("POST", "/api/feedback", body=body, headers=headers)
        response = conn.getresponse()
        answer = response.read()
        if response.status != 201:
            failures.append(f"{response.status} {answer[:200]!r}")
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--batch", type=int, default=1, help="events per request (1 to 1000)")
    parser.add_argument("--rows", type=int, default=1000, help="rows (interactions) of the stored run")
    parser.add_argument("--store", default=None, help="a postgresql:// URL (default: a new SQLite file)")
    parser.add_argument("--http", default="auto", choices=("auto", "h11", "httptools"),
                        help="uvicorn's HTTP parser (auto: httptools when installed)")
    parser.add_argument("--loop", default="auto", choices=("auto", "asyncio", "uvloop"),
                        help="uvicorn's event loop (auto: uvloop when installed)")
    args = parser.parse_args()

    folder = tempfile.mkdtemp(prefix="feedback-bench-")
    where = args.store or str(Path(folder) / "runs.db")
    store = open_store(where)
    run_id = store.create_run({}, "production sample", "bench")
    store.put_rows(run_id, [StoredRow(i, None, None, {"id": f"i{i}", "query": "q", "response": "r"}, None,
                                      None) for i in range(args.rows)])
    before = len(feedback_for(store))

    port, token = _free_port(), "bench-token"
    server = multiprocessing.get_context("spawn").Process(target=_serve,
                                                          args=(where, port, token, args.http, args.loop),
                                                          daemon=True)
    server.start()
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            if time.monotonic() > deadline:
                raise SystemExit("the app did not start") from None
            time.sleep(0.1)

    events = [_event(i, args.rows) for i in range(args.events)]
    bodies = [json.dumps(events[i:i + args.batch] if args.batch > 1 else events[i]).encode()
              for i in range(0, len(events), args.batch)]
    shares: list[list[bytes]] = [bodies[c::args.clients] for c in range(args.clients)]
    failures: list[str] = []
    threads = [threading.Thread(target=_client, args=(port, token, share, failures)) for share in shares]
    server_cpu = _cpu_seconds(server.pid or 0)
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - start
    server_cpu = _cpu_seconds(server.pid or 0) - server_cpu
    server.terminate()
    server.join(10)

    stored = feedback_for(store)[before:]
    linked = run_feedback(store, run_id)
    events_linked = sum(sum(v for k, v in cols.items() if isinstance(v, int) and not isinstance(v, bool))
                        for cols in linked.values())
    store.close()
    load = os.getloadavg()[0]
    print(f"backend {'postgresql' if args.store else 'sqlite'}  events {args.events}  batch {args.batch}  "
          f"clients {args.clients}  requests {len(bodies)}  server {_stack(args.http, args.loop)}")
    print(f"  {elapsed:.2f} s  {args.events / elapsed:,.0f} events/s  "
          f"{len(bodies) / elapsed:,.0f} requests/s  "
          f"server CPU {1e6 * server_cpu / len(bodies):,.0f} us/request")
    print(f"  stored {len(stored)} of {args.events}  failed requests {len(failures)}  "
          f"rows with feedback {len(linked)} of {args.rows}  load average {load:.1f}")
    if failures:
        print("  first failure:", failures[0])
    lost = args.events - len(stored)
    # counted kinds (thumbs, reports) link one by one; rated kinds are averaged, so they are checked by rows
    if lost or failures or len(linked) != min(args.rows, args.events) or events_linked <= 0:
        raise SystemExit(f"LOSS: {lost} events missing, {len(failures)} failed requests")


if __name__ == "__main__":
    main()
