"""Benchmark: what ``evaluate(output_path=FOLDER)`` costs, written as rows complete (engine/rows_file.py).

The text benchmark's run (``benchmarks/text_metrics.py``: f1, exact match, BLEU, ROUGE-L, GLEU on the
same generated rows), three ways, in one process after a 1,000-row warm-up:

1. no output path (nothing watched, nothing written);
2. ``output_path=FOLDER``: ``rows.jsonl`` and the SDK file's rows appended while the run goes, the rest
   at the end;
3. no output path, then ``result.write(FOLDER)`` (the files written whole after the run, as before).

Wall time and this process's CPU (the parent: where the files are written) for each. Usage::

    PYTHONPATH=src .venv/bin/python benchmarks/output_files.py [--rows 100000] [--workers N]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

from text_metrics import make_rows


def run(
    rows: list[dict[str, str]], workers: int | None, out: Path | None, tmp: str, after: bool
) -> tuple[float, float]:
    from touchstone import evaluate
    from touchstone.evaluators.text import (
        BleuScoreEvaluator,
        ExactMatchEvaluator,
        F1ScoreEvaluator,
        GleuScoreEvaluator,
        RougeScoreEvaluator,
    )

    evaluators: dict[str, Any] = {
        "f1_score": F1ScoreEvaluator(empty_answers_agree=True),
        "exact_match": ExactMatchEvaluator(),
        "bleu": BleuScoreEvaluator(implementation="sacrebleu"),
        "rouge": RougeScoreEvaluator("rougeL"),
        "gleu": GleuScoreEvaluator(tokenizer="nltk"),
    }
    started, cpu = time.perf_counter(), time.process_time()
    result = evaluate(data=rows, evaluators=evaluators, store=str(Path(tmp) / f"runs-{time.time_ns()}.db"),
                      workers=workers, output_path=None if after else out)
    if after and out is not None:
        result.write(out)
    return time.perf_counter() - started, time.process_time() - cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=None)
    args = parser.parse_args()
    rows = make_rows(args.rows)
    print(f"{len(rows)} rows, {os.cpu_count()} CPUs; load average {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        run(rows[:1000], args.workers, Path(tmp) / "warm", tmp, after=False)
        for label, out, after in [
            ("no output path", None, False),
            ("output folder, written as rows complete", Path(tmp) / "progressive", False),
            ("no output path, then result.write(folder)", Path(tmp) / "after", True),
        ]:
            wall, cpu = run(rows, args.workers, out, tmp, after)
            print(f"{label}: {wall:.1f} s wall ({len(rows) / wall:,.0f} rows/s), parent CPU {cpu:.1f} s "
                  f"({cpu / len(rows) * 1e6:.0f} us/row)", flush=True)
        same = all((Path(tmp) / "progressive" / f).read_bytes() == (Path(tmp) / "after" / f).read_bytes()
                   for f in ("rows.jsonl", "evaluation_results.json"))
        print(f"files identical: {same}; load average {os.getloadavg()}")


if __name__ == "__main__":
    main()
