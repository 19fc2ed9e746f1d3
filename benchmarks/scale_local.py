"""Scale, locally: many rows of f1_score, exact_match and bleu_score from a JSONL file, in bounded memory.

The rows (random sentences of 3-14 words from a 16-word vocabulary, 20% exact matches: the rows of
``benchmarks/scale.py``) are written to a JSONL file first; each scenario then runs ``evaluate()``
on that file in its own process while this one samples, every 0.2 s, the memory of that process and
all its descendants (the pool workers):

* RSS summed over the tree (what ``ps`` shows; pages shared between a parent and its forked workers
  count once per process), and
* PSS summed over the tree (``/proc/PID/smaps_rollup``: each shared page divided between the
  processes sharing it, so the sum is the memory the tree really holds).

Scenarios: ``local`` (this tree's code) and ``reference`` (the code of ``--reference-ref``, a git
revision, unpacked into a temporary folder: the run before streaming, for the equality check). Each
prints one JSON line: seconds and rows/s of ``evaluate()``, peak RSS and PSS of the tree (MiB; also
the peaks of the parent alone and of the largest worker), then
digests of ``result.metrics``, ``result.summary`` and of every row (each row as JSON, hashed in
order; the seconds that took are apart). ``--compare`` runs ``reference`` then ``local`` and says
whether the metrics, summary and rows are identical.

    flock /tmp/bench.lock env PYTHONPATH=src:. .venv/bin/python benchmarks/scale_local.py \\
        --rows 1000000 [--scenarios local | --compare --reference-ref 4517f8a]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PAGE = os.sysconf("SC_PAGE_SIZE")

CHILD = r"""
import hashlib, json, sys, time
args = json.loads(sys.argv[1])
from touchstone import BleuScoreEvaluator, ExactMatchEvaluator, F1ScoreEvaluator, evaluate

evs = {"f1": F1ScoreEvaluator(), "em": ExactMatchEvaluator(), "bleu": BleuScoreEvaluator()}
started = time.perf_counter()
result = evaluate(data=args["data"], evaluators=evs, store=args["store"])
seconds = time.perf_counter() - started
print("EVALUATED", flush=True)
def digest(value):
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()
hashed = time.perf_counter()
rows = hashlib.sha256()
n = 0
for row in result.rows:
    rows.update(json.dumps(row, default=str).encode())
    rows.update(b"\n")
    n += 1
print(json.dumps({
    "seconds": seconds, "rows": len(result.rows), "rows_read": n, "failed": result.n_failed,
    "rows_type": type(result.rows).__name__, "row_digest_seconds": time.perf_counter() - hashed,
    "metrics_digest": digest(result.metrics), "summary_digest": digest(result.summary),
    "rows_digest": rows.hexdigest(), "metrics": result.metrics,
}))
"""


def write_rows(path: Path, n: int) -> None:
    rng = random.Random(1)
    words = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "blue", "sky", "red", "fox",
             "jumps", "over", "lazy"]
    with path.open("w", encoding="utf-8") as fh:
        for _ in range(n):
            truth = " ".join(rng.choices(words, k=rng.randint(3, 14)))
            response = truth if rng.random() < 0.2 else " ".join(rng.choices(words, k=rng.randint(3, 14)))
            fh.write(json.dumps({"response": response, "ground_truth": truth}) + "\n")


def tree(root: int) -> list[int]:
    """``root`` and its descendants."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
                parents[int(entry.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    members, frontier = [root], [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in members:
                members.append(child)
                frontier.append(child)
    return members


def memory(pids: list[int]) -> dict[int, tuple[int, int]]:
    """(RSS, PSS) in bytes of each of ``pids``."""
    found: dict[int, tuple[int, int]] = {}
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            rss = int(stat[stat.rindex(")") + 2 :].split()[21]) * PAGE
            pss = 0
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    pss = int(line.split()[1]) * 1024
                    break
            found[pid] = (rss, pss)
        except (OSError, ValueError, IndexError):
            continue
    return found


def measured(args: dict[str, Any], pythonpath: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    peak = {"rss": 0, "pss": 0, "rss_evaluate": 0, "pss_evaluate": 0, "processes": 0,
            "parent_rss": 0, "parent_pss": 0, "worker_rss": 0, "worker_pss": 0}
    done = threading.Event()
    evaluating = threading.Event()
    evaluating.set()

    def sample() -> None:
        while not done.is_set():
            pids = tree(proc.pid)
            each = memory(pids)
            rss, pss = sum(r for r, _ in each.values()), sum(p for _, p in each.values())
            peak["rss"], peak["pss"] = max(peak["rss"], rss), max(peak["pss"], pss)
            for pid, (one_rss, one_pss) in each.items():
                role = "parent" if pid == proc.pid else "worker"
                peak[f"{role}_rss"] = max(peak[f"{role}_rss"], one_rss)
                peak[f"{role}_pss"] = max(peak[f"{role}_pss"], one_pss)
            peak["processes"] = max(peak["processes"], len(pids))
            if evaluating.is_set():
                peak["rss_evaluate"] = max(peak["rss_evaluate"], rss)
                peak["pss_evaluate"] = max(peak["pss_evaluate"], pss)
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:
        if line.startswith("EVALUATED"):
            evaluating.clear()
        lines.append(line)
    err = proc.stderr.read() if proc.stderr else ""
    proc.wait()
    done.set()
    sampler.join()
    if proc.returncode != 0:
        raise SystemExit(f"{args['scenario']} failed:\n{err[-3000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    mib = 2**20
    result.update(
        scenario=args["scenario"], seconds=round(result["seconds"], 2),
        rows_per_s=round(result["rows"] / result["seconds"], 1),
        peak_rss_mib=round(peak["rss"] / mib, 1), peak_pss_mib=round(peak["pss"] / mib, 1),
        peak_rss_mib_evaluate=round(peak["rss_evaluate"] / mib, 1),
        peak_pss_mib_evaluate=round(peak["pss_evaluate"] / mib, 1),
        processes=peak["processes"], row_digest_seconds=round(result["row_digest_seconds"], 2),
        **{f"peak_{role}_{kind}_mib": round(peak[f"{role}_{kind}"] / mib, 1)
           for role in ("parent", "worker") for kind in ("rss", "pss")},
    )
    return result


def reference_tree(ref: str, into: Path) -> str:
    """The ``src`` folder of git revision ``ref``, unpacked under ``into``; its path."""
    archive = into / "ref.tar"
    subprocess.run(["git", "archive", "--format=tar", "-o", str(archive), ref, "src"], cwd=ROOT, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "ref", filter="data")
    return str(into / "ref" / "src")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows in the JSONL file")
    parser.add_argument("--scenarios", default="local", help="comma-separated: local, reference")
    parser.add_argument("--compare", action="store_true",
                        help="run reference then local and compare metrics, summary and rows")
    parser.add_argument("--reference-ref", default="4517f8a",
                        help="git revision of the reference code (default: before streaming)")
    args = parser.parse_args()
    scenarios = ["reference", "local"] if args.compare else args.scenarios.split(",")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "rows.jsonl"
        write_rows(data, args.rows)
        for scenario in scenarios:
            path = f"{ROOT / 'src'}:{ROOT}"
            if scenario == "reference":
                path = reference_tree(args.reference_ref, Path(tmp))
            store = str(Path(tmp) / f"{scenario}.db")
            result = measured({"scenario": scenario, "data": str(data), "store": store}, path)
            result["load_average"] = os.getloadavg()
            results[scenario] = result
            print(json.dumps({k: v for k, v in result.items() if k != "metrics"}), flush=True)
    if args.compare:
        ref, local = results["reference"], results["local"]
        same = {key: ref[key] == local[key] for key in ("metrics_digest", "summary_digest", "rows_digest")}
        print(json.dumps({"identical": same, "metrics": ref["metrics"] == local["metrics"]}), flush=True)


if __name__ == "__main__":
    main()
