"""How long a paired comparison of two large runs takes: builds two runs of ``--rows`` rows (100,000 by
default) with a 0-1 score with a threshold (continuous: the bootstrap's general path) and a 0/1
score (few levels: its multinomial path), rows carrying an ``id``, in a SQLite store, then times
reading one run, ``compare_runs`` (2,000 bootstrap resamples) and ``rows_changed_most`` (median,
lowest and highest of ``--repeat`` runs).

    .venv/bin/python benchmarks/compare.py --rows 100000 --repeat 3

Rows and scores are written through the store's API as ``evaluate()`` writes them; nothing is
scored: what is measured is the comparison.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from touchstone.compare import compare_runs, rows_changed_most
from touchstone.compare.matching import load_run
from touchstone.scores import score_line
from touchstone.store import open_store
from touchstone.store.base import ScoreRecord, Store, StoredRow


def build_run(store: Store, n: int, rng: np.random.Generator, shift: float) -> str:
    run_id = store.create_run({"data": "benchmark", "evaluators": {}}, None, "bench")
    store.put_rows(run_id, [StoredRow(i, "bench", i + 1, {"id": f"row-{i}", "query": "q"}, None, None)
                            for i in range(n)])
    f1 = np.clip(rng.normal(0.6 + shift, 0.2, n), 0, 1)
    em = rng.random(n) < 0.5 + shift
    store.put_scores(run_id, "f1", [
        ScoreRecord(i, "{}", False, None, [score_line("f1_score", float(v), None, "ok", None, int(v >= 0.5))])
        for i, v in enumerate(f1)
    ])
    store.put_scores(run_id, "em", [
        ScoreRecord(i, "{}", False, None, [score_line("exact_match", float(v), None, "ok", None, int(v))])
        for i, v in enumerate(em)
    ])
    summary = {"f1.f1_score": {"higher_is_better": True}, "em.exact_match": {"higher_is_better": True}}
    store.finish_run(run_id, "completed", {}, {"summary": summary})
    return run_id


def timed(fn: Callable[[], object], repeat: int) -> tuple[float, float, float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), min(times), max(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        store = open_store(Path(tmp) / "runs.db")
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        a = build_run(store, args.rows, rng, 0.0)
        b = build_run(store, args.rows, rng, -0.01)
        print(f"built two runs of {args.rows} rows in {time.perf_counter() - start:.1f} s")
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
        for label, fn in (
            ("read one run (ids + score columns)", lambda: load_run(store, a)),
            ("compare_runs, 2 metrics, n_boot=2000", lambda: compare_runs(store, a, b)),
            ("compare_runs, 2 metrics, n_boot=200", lambda: compare_runs(store, a, b, n_boot=200)),
            ("rows_changed_most, limit 20", lambda: rows_changed_most(store, a, b, limit=20)),
        ):
            median, low, high = timed(fn, args.repeat)
            print(f"{label:40s} median {median:.2f} s (min {low:.2f}, max {high:.2f})")
        result = compare_runs(store, a, b)
        for m in result.metrics:
            print(f"  {m.metric}: diff {m.difference:+.4f} CI {m.ci} p={m.p_value:.3g} ({m.test})"
                  f" -> {m.verdict}")
        store.close()


if __name__ == "__main__":
    main()
