"""Writing and reading score lines on both store backends: SQLite (a file) and PostgreSQL (a server
on loopback).

Writes ROWS results of one evaluator, each with LINES typed score lines, (a) in one ``put_scores``
call and (b) in groups of 256 rows (what the engine's group writer sends), then reads the typed
lines back (``score_values``) and runs one aggregate of the kind the dashboard sends (``fetch_all``).

    python benchmarks/store_backends.py [--rows 100000] [--lines 1] [--url postgresql://...] [--no-copy]

Without ``--url`` a throwaway PostgreSQL server is started from /usr/lib/postgresql/*/bin (the test
suite's helper), with ``fsync=off``: the figures are the store's work, not the disk's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from touchstone.scores import Score
from touchstone.store import ScoreRecord, Store, open_store


def _records(rows: int, lines: int) -> list[ScoreRecord]:
    return [
        ScoreRecord(i, {"m": i / rows, "m_result": "pass"}, False, None,
         [Score(f"m{k}" if k else "m", i / rows, passed=i % 2 == 0) for k in range(lines)])
        for i in range(rows)
    ]


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def bench(store: Store, label: str, rows: int, lines: int) -> None:
    records = _records(rows, lines)
    one = store.create_run({}, "bench-one", "bench")
    t_one = _timed(lambda: store.put_scores(one, "m", records))
    grouped = store.create_run({}, "bench-grouped", "bench")

    def groups() -> None:
        for start in range(0, rows, 256):
            store.put_scores(grouped, "m", records[start:start + 256])

    t_grouped = _timed(groups)
    t_read = _timed(lambda: store.score_values(one))
    t_query = _timed(lambda: store.fetch_all(
        "SELECT metric, COUNT(*), AVG(value), SUM(passed) FROM score_values WHERE run_id = ? GROUP BY metric",
        (one,),
    ))
    n = rows * lines
    print(f"{label:<11} one call: {t_one:6.2f} s ({n / t_one:9,.0f} lines/s)   "
          f"groups of 256: {t_grouped:6.2f} s ({n / t_grouped:9,.0f} lines/s)   "
          f"read back: {t_read:5.2f} s   aggregate: {t_query * 1000:6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--lines", type=int, default=1, help="typed score lines per row")
    parser.add_argument("--url", help="a PostgreSQL store URL (default: start a throwaway server)")
    parser.add_argument("--no-copy", action="store_true",
                        help="PostgreSQL without COPY: every write one pipelined executemany upsert")
    args = parser.parse_args()
    if args.no_copy:
        import touchstone.store.postgres as pg

        pg.COPY_FROM = 10**12
    print(f"{args.rows:,} rows x {args.lines} score line(s); load average {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        sqlite_store = open_store(Path(tmp) / "bench.db")
        bench(sqlite_store, "SQLite", args.rows, args.lines)
        sqlite_store.close()
    server = None
    url = args.url
    if url is None:
        from tests.store.pg_server import PgServer, find_bindir

        bindir = find_bindir()
        if bindir is None:
            sys.exit("no PostgreSQL binaries found; pass --url")
        server = PgServer(bindir).start()
        url = server.url(server.create_database())
    try:
        pg_store = open_store(url)
        bench(pg_store, "PG no COPY" if args.no_copy else "PostgreSQL", args.rows, args.lines)
        pg_store.close()
    finally:
        if server is not None:
            server.stop()


if __name__ == "__main__":
    main()
