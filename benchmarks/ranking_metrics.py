"""Benchmark: ndcg@10, mrr, recall@10, precision@10 on 100,000 queries x 100 retrieved documents.

touchstone (``RankingEvaluator.score_batch``, the vectorised path the engine calls, and the whole
``touchstone.evaluate()``) against ranx and pytrec_eval on the same data, in one run; every value is
checked equal (1e-9). Each timing starts from the same plain Python data (lists of ids and label
dicts) and includes the conversion each library needs. nDCG is compared with linear gain (trec_eval's;
ranx ``ndcg``). Usage::

    PYTHONPATH=src .venv/bin/python benchmarks/ranking_metrics.py [--queries 100000] [--docs 100]
"""

from __future__ import annotations

import argparse
import os
import random
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def make_data(n: int, docs: int, seed: int = 20240607) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    pool = [f"doc{i}" for i in range(5000)]
    rows = []
    for _ in range(n):
        retrieved = rng.sample(pool, docs)
        judged = rng.sample(retrieved[:30], 8) + rng.sample(pool, 4)
        gt = [{"document_id": d, "query_relevance_label": rng.randint(0, 3)} for d in dict.fromkeys(judged)]
        rows.append({"retrieved_documents": retrieved, "retrieval_ground_truth": gt})
    return rows


def run_ranx(rows: list[dict[str, Any]]) -> tuple[float, dict[str, np.ndarray]]:
    from ranx import Qrels, Run, evaluate

    # warm the numba functions so compilation is not counted
    evaluate(Qrels({"q": {"a": 1}}), Run({"q": {"a": 1.0}}), ["ndcg@10", "mrr", "recall@10", "precision@10"])
    started = time.perf_counter()
    qrels = Qrels(
        {
            f"q{i:06d}": {g["document_id"]: g["query_relevance_label"] for g in r["retrieval_ground_truth"]}
            for i, r in enumerate(rows)
        }
    )
    run = Run(
        {
            f"q{i:06d}": {
                d: float(len(r["retrieved_documents"]) - k) for k, d in enumerate(r["retrieved_documents"])
            }
            for i, r in enumerate(rows)
        }
    )
    res = evaluate(qrels, run, ["ndcg@10", "mrr", "recall@10", "precision@10"], return_mean=False)
    return time.perf_counter() - started, res


def run_pytrec(rows: list[dict[str, Any]]) -> tuple[float, dict[str, np.ndarray]]:
    import pytrec_eval

    started = time.perf_counter()
    qrels = {
        f"q{i:06d}": {g["document_id"]: g["query_relevance_label"] for g in r["retrieval_ground_truth"]}
        for i, r in enumerate(rows)
    }
    run = {
        f"q{i:06d}": {
            d: float(len(r["retrieved_documents"]) - k) for k, d in enumerate(r["retrieved_documents"])
        }
        for i, r in enumerate(rows)
    }
    res = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_10", "recip_rank", "recall_10", "P_10"}).evaluate(
        run
    )
    elapsed = time.perf_counter() - started
    order = sorted(res)
    cols = {
        "ndcg@10": "ndcg_cut_10",
        "mrr": "recip_rank",
        "recall@10": "recall_10",
        "precision@10": "P_10",
    }
    return elapsed, {k: np.array([res[q][v] for q in order]) for k, v in cols.items()}


def run_touchstone(rows: list[dict[str, Any]]) -> tuple[float, dict[str, np.ndarray]]:
    from touchstone.evaluators.ranking import RankingEvaluator

    ev = RankingEvaluator(k=10, gain="linear")
    started = time.perf_counter()
    outs = ev.score_batch(rows)
    elapsed = time.perf_counter() - started
    cols = {
        "ndcg@10": "ndcg_at_10",
        "mrr": "mrr",
        "recall@10": "recall_at_10",
        "precision@10": "precision_at_10",
    }
    return elapsed, {k: np.array([o[v] for o in outs]) for k, v in cols.items()}


def run_evaluate(rows: list[dict[str, Any]]) -> float:
    from touchstone import evaluate
    from touchstone.evaluators.ranking import RankingEvaluator

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        evaluate(
            data=rows,
            evaluators={"ranking": RankingEvaluator(k=10, gain="linear")},
            store=str(Path(tmp) / "runs.db"),
        )
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=100_000)
    parser.add_argument("--docs", type=int, default=100)
    parser.add_argument("--skip-evaluate", action="store_true")
    parser.add_argument("--evaluate-only", type=int, default=0, metavar="N",
                        help="only time evaluate(), N times, in a process that ran nothing else first")
    args = parser.parse_args()
    rows = make_data(args.queries, args.docs)
    print(f"{args.queries} queries x {args.docs} documents, {os.cpu_count()} CPUs", flush=True)
    if args.evaluate_only:
        for _ in range(args.evaluate_only):
            print(f"touchstone evaluate() end to end: {run_evaluate(rows):.2f} s", flush=True)
        return

    t_ts, ours = run_touchstone(rows)
    print(
        f"touchstone RankingEvaluator.score_batch: {t_ts:.2f} s ({args.queries / t_ts:,.0f} queries/s)",
        flush=True,
    )
    t_ranx, ranx_res = run_ranx(rows)
    print(
        f"ranx (numba, Qrels/Run built from dicts): {t_ranx:.2f} s ({args.queries / t_ranx:,.0f} queries/s)",
        flush=True,
    )
    t_trec, trec_res = run_pytrec(rows)
    print(f"pytrec_eval: {t_trec:.2f} s ({args.queries / t_trec:,.0f} queries/s)", flush=True)
    worst = 0.0
    for k in ours:
        worst = max(
            worst, float(np.abs(ours[k] - ranx_res[k]).max()), float(np.abs(ours[k] - trec_res[k]).max())
        )
    assert worst <= 1e-9, worst
    print(f"max |difference| against both: {worst:.2e}")
    fastest = min(t_ranx, t_trec)
    print(f"touchstone / fastest reference: {t_ts / fastest:.2f} (goal <= 1.0)")
    if not args.skip_evaluate:
        t_ev = run_evaluate(rows)
        print(
            f"touchstone evaluate() end to end (validation, store, summary): {t_ev:.2f} s "
            f"({args.queries / t_ev:,.0f} queries/s)"
        )


if __name__ == "__main__":
    main()
