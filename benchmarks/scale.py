"""Scale: many rows locally and through the Ray executor.

Three scenarios, each run in its own process while this one samples, every 0.2 s, the memory of that
process and all its descendants (pool workers; a Ray cluster the run started: GCS, raylet, its
workers and agents, and the object store, whose shared-memory pages count in the processes that
touch them):

* RSS summed over the tree (shared pages count once per process that maps them), and PSS summed
  over the tree (``/proc/PID/smaps_rollup``: each shared page divided between the processes sharing
  it, so the sum is what the tree really holds), with its shared-memory part (``Pss_Shmem``: for Ray,
  the object store) and, at the peak, the PSS of each kind of process (driver, raylet, GCS, Ray
  workers, the rest).

* ``local``: ``--rows`` rows of f1_score, exact_match and bleu_score with ``evaluate()`` (process pool)
  from a JSONL file, which the run streams;
* ``ray``: the same file through ``executor="ray"`` on a local cluster of ``--ray-cpus`` CPUs started
  by the run (``ray.init``): Ray Data reads the file in parts, the metrics run in ``map_batches``;
* ``read``: the ``ray`` scenario's reading of the file alone (``read_file_dataset`` of
  ``engine/executors/ray/files.py``,
  materialised): seconds and memory of Ray Data reading it;
* ``judge``: ``--judge-rows`` rows of groundedness on the fake server (its own process, not measured;
  200 ms a reply, 64 at once, 429 beyond: capacity 320 calls/s) through the Ray executor with two
  judge workers: the share of the server's capacity used, and its 429s.

    flock /tmp/bench.lock env PYTHONPATH=src:. .venv/bin/python benchmarks/scale.py [--rows 1000000]
        [--judge-rows 100000] [--scenarios local,ray,judge] [--ray-cpus 2]

Prints one JSON line per scenario: seconds and rows/s of ``evaluate()``, peak RSS and PSS of the tree
(MiB), digests of ``result.metrics`` and ``result.summary`` (equal across scenarios, and to
``benchmarks/scale_local.py``'s on the same rows, when the results are), and for the judge the
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_local import tree, write_rows  # the same rows and process-tree walk

ROOT = Path(__file__).resolve().parents[1]
LATENCY = 0.2
CAP = 64
CAPACITY = CAP / LATENCY

CHILD = r"""
import hashlib, json, os, sys, time
args = json.loads(sys.argv[1])
from touchstone import BleuScoreEvaluator, ExactMatchEvaluator, F1ScoreEvaluator, evaluate

kind = args["scenario"]
executor = None
if kind in ("ray", "judge", "read"):
    import ray
    os.environ["RAY_AUTH_MODE"] = "disabled"
    ray.init(num_cpus=args["ray_cpus"], include_dashboard=False, log_to_driver=False,
             object_store_memory=args.get("object_store_bytes"))
    executor = "ray"
if kind == "read":  # the Ray executor's reading of the file alone, materialised in the object store
    from touchstone.engine.executors.ray.files import read_file_dataset
    started = time.perf_counter()
    dataset = read_file_dataset(args["data"]).materialize()
    n = dataset.count()
    print(json.dumps({"seconds": time.perf_counter() - started, "rows": n, "blocks": dataset.num_blocks()}))
    sys.exit(0)
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
    # from a JSONL file (the rows of benchmarks/scale_local.py): a local run streams it, Ray Data
    # reads it in parts under the Ray executor
    data = args["data"]
started = time.perf_counter()
result = evaluate(data=data, evaluators=evs, store=args["store"], executor=executor, **options)
seconds = time.perf_counter() - started

def digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()

print(json.dumps({"seconds": seconds, "rows": len(result.rows), "failed": result.n_failed,
                  "metrics": {k: v for k, v in result.metrics.items() if isinstance(v, float)},
                  "metrics_digest": digest(result.metrics), "summary_digest": digest(result.summary),
                  "judge_stats": (result.run.get("judge") or {}).get("stats")}))
"""


PAGE = os.sysconf("SC_PAGE_SIZE")
ROLES = ("driver", "raylet", "gcs", "task_workers", "ray_data_actors", "other")


def role(pid: int, root: int) -> str:
    """What a process of the tree is: the driver (the run's process), Ray's raylet or GCS, a worker
    running tasks or the judge actors (``ray::MapBatches(...)``, ``ray::JudgeWorker``, ``ray::IDLE``...),
    Ray Data's own actors (``ray::_StatsActor``, ``ray::_AutoscalingCoordinatorActor``), or the rest
    (Ray's dashboard, agents and monitors)."""
    if pid == root:
        return "driver"
    try:
        comm = Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "other"
    if comm == "raylet":
        return "raylet"
    if comm.startswith("gcs_server"):
        return "gcs"
    if comm.startswith("ray::_"):
        return "ray_data_actors"
    if comm.startswith(("ray::DashboardAg", "ray::RuntimeEnv")) or not comm.startswith("ray::"):
        return "other"
    return "task_workers"


def memory(pid: int) -> tuple[int, int, int]:
    """(RSS, PSS, PSS of shared memory) in bytes of process ``pid`` (zeros once it is gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        rss = int(stat[stat.rindex(")") + 2 :].split()[21]) * PAGE
        fields = {}
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
            key, _, value = line.partition(":")
            fields[key] = int(value.split()[0]) * 1024
        return rss, fields.get("Pss", 0), fields.get("Pss_Shmem", 0)
    except (OSError, ValueError, IndexError):
        return 0, 0, 0


class Sampler:
    """Peaks of the memory of a process tree, sampled every 0.2 s in a thread."""

    def __init__(self, root: int) -> None:
        self.root = root
        self.peak_rss = self.peak_pss = self.peak_shmem = self.processes = 0
        self.at_peak: dict[str, float] = {}
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while not self.done.is_set():
            pids = tree(self.root)
            by_role = dict.fromkeys(ROLES, 0)
            rss = pss = shmem = 0
            for pid in pids:
                one_rss, one_pss, one_shmem = memory(pid)
                rss, pss, shmem = rss + one_rss, pss + one_pss, shmem + one_shmem
                by_role[role(pid, self.root)] += one_pss
            self.peak_rss, self.processes = max(self.peak_rss, rss), max(self.processes, len(pids))
            if pss > self.peak_pss:
                self.peak_pss, self.peak_shmem = pss, shmem
                self.at_peak = {name: round(value / 2**20, 1) for name, value in by_role.items()}
            time.sleep(0.2)

    def stop(self) -> dict[str, Any]:
        self.done.set()
        self.thread.join()
        mib = 2**20
        return {"peak_rss_mib": round(self.peak_rss / mib, 1), "peak_pss_mib": round(self.peak_pss / mib, 1),
                "peak_pss_shmem_mib": round(self.peak_shmem / mib, 1), "pss_mib_at_peak": self.at_peak,
                "processes": self.processes}


def measured(args: dict[str, Any]) -> dict[str, Any]:
    src = args.get("src") or ROOT / "src"
    env = {**os.environ, "PYTHONPATH": f"{src}:{ROOT}", "RAY_AUTH_MODE": "disabled",
           "RAY_USAGE_STATS_ENABLED": "0"}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    sampler = Sampler(proc.pid)
    out, err = proc.communicate()
    peaks = sampler.stop()
    if proc.returncode != 0:
        raise SystemExit(f"{args['scenario']} failed:\n{err[-3000:]}")
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    result.update(scenario=args["scenario"], **peaks,
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
    parser.add_argument("--rows", type=int, default=1_000_000,
                        help="rows of the local and ray scenarios (a JSONL file written first)")
    parser.add_argument("--judge-rows", type=int, default=100_000, help="rows of the judge scenario")
    parser.add_argument("--ray-cpus", type=int, default=2,
                        help="CPUs of the local Ray cluster the run starts (one worker process each)")
    parser.add_argument("--object-store-mib", type=int, default=None,
                        help="the Ray object store's size (default: Ray's, 30%% of the memory)")
    parser.add_argument("--scenarios", default="local,ray,judge",
                        help="comma-separated: local, ray, read, judge")
    parser.add_argument("--src", default=None,
                        help="the touchstone sources to measure (default: this tree's src; e.g. an earlier "
                             "revision's, unpacked with `git archive REV src | tar -x -C DIR`)")
    args = parser.parse_args()
    store_bytes = None if args.object_store_mib is None else args.object_store_mib << 20
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.jsonl"
        if {"local", "ray", "read"} & set(args.scenarios.split(",")):
            write_rows(data, args.rows)
        for scenario in args.scenarios.split(","):
            store = str(Path(tmp) / f"{scenario}.db")
            if scenario == "judge":
                result = judge(args.judge_rows, args.ray_cpus, store)
            else:
                result = measured({"scenario": scenario, "rows": args.rows, "ray_cpus": args.ray_cpus,
                                   "store": store, "data": str(data), "object_store_bytes": store_bytes,
                                   "src": args.src})
            result["load_average"] = os.getloadavg()
            print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
