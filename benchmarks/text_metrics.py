"""Benchmark: f1, exact match, BLEU, ROUGE-L and GLEU on 100,000 rows.

Three ways, on the same rows, in one run:

1. ``touchstone.evaluate()`` with the five evaluators (validation, batching, process pool, run store,
   aggregation with bootstrap intervals, corpus BLEU -- everything a user gets);
2. the plain reference loop: per row, the SQuAD v1.1 f1 / exact-match functions, ``sacrebleu.sentence_bleu``,
   ``rouge_score``'s ``RougeScorer.score`` (built once), nltk's ``sentence_gleu`` on nltk word tokens,
   then ``sacrebleu.corpus_bleu`` once (the same outputs as 1);
3. ``azure-ai-evaluation``'s evaluators of the same names, called directly and through its
   ``evaluate()`` (``F1ScoreEvaluator``, ``BleuScoreEvaluator``,
   ``RougeScoreEvaluator(rougeL)``, ``GleuScoreEvaluator``; the SDK has no exact-match evaluator), called
   per row in a subprocess with the SDK's virtual environment, on the same rows (``--sdk-rows`` takes
   a subsample, extrapolated). Its BLEU/GLEU tokenizer needs nltk's punkt data, which is not
   installed and cannot be
   downloaded here, so ``nltk_tokenize`` is replaced by the data-free Treebank tokenizer (the same
   tokenizer touchstone uses; punkt's sentence splitting would only add time to the SDK's figure).

Values of 1 and 2 are checked equal (1e-9) on every row. Usage::

    PYTHONPATH=src .venv/bin/python benchmarks/text_metrics.py [--rows 100000] [--sdk-rows 5000]
        [--sdk-python /tmp/azvenv/bin/python] [--workers N]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import string
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

WORDS = [
    "the",
    "a",
    "an",
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
    "ounces",
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
    "5-7",
    "model",
    "version",
    "new",
    "older",
    "better",
    "best",
    "longer",
    "shorter",
]


def make_rows(n: int, seed: int = 20240607) -> list[dict[str, str]]:
    """QA-like rows: a ground truth of 8-30 words, a response that copies, drops, swaps and adds words."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        truth = [rng.choice(WORDS) for _ in range(rng.randint(8, 30))]
        resp = [w for w in truth if rng.random() > 0.2]
        for _ in range(rng.randint(0, 6)):
            resp.insert(rng.randint(0, len(resp)), rng.choice(WORDS))
        if len(resp) > 3 and rng.random() < 0.3:
            i = rng.randrange(len(resp) - 1)
            resp[i], resp[i + 1] = resp[i + 1], resp[i]
        end = rng.choice([".", ".", "!", "", "?"])
        rows.append(
            {
                "response": " ".join(resp).capitalize() + end,
                "ground_truth": " ".join(truth).capitalize() + ".",
            }
        )
    return rows


# ------------------------------------------------------------------------- the plain reference loop
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def squad_normalize(s: str) -> str:
    """SQuAD v1.1 evaluation script's normalize_answer."""
    s = s.lower()
    s = "".join(ch for ch in s if ch not in set(string.punctuation))
    s = _ARTICLES.sub(" ", s)
    return " ".join(s.split())


def squad_f1(prediction: str, truth: str) -> float:
    p, g = squad_normalize(prediction).split(), squad_normalize(truth).split()
    if not p or not g:
        return float(p == g)
    same = sum((Counter(p) & Counter(g)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def reference_loop(rows: list[dict[str, str]]) -> tuple[float, list[dict[str, float]], float]:
    import sacrebleu
    from nltk.tokenize import word_tokenize
    from nltk.translate.gleu_score import sentence_gleu
    from rouge_score.rouge_scorer import RougeScorer

    started = time.perf_counter()
    rouge = RougeScorer(["rougeL"])
    out = []
    for row in rows:
        r, g = row["response"], row["ground_truth"]
        rl = rouge.score(g, r)["rougeL"]
        out.append(
            {
                "f1": squad_f1(r, g),
                "em": float(squad_normalize(r) == squad_normalize(g)),
                "bleu": sacrebleu.sentence_bleu(r, [g]).score / 100,
                "rouge_p": rl.precision,
                "rouge_r": rl.recall,
                "rouge_f": rl.fmeasure,
                "gleu": sentence_gleu(
                    [word_tokenize(g, preserve_line=True)], word_tokenize(r, preserve_line=True)
                ),
            }
        )
    corpus = sacrebleu.corpus_bleu([row["response"] for row in rows], [[row["ground_truth"] for row in rows]])
    return time.perf_counter() - started, out, corpus.score / 100


# ------------------------------------------------------------------------------------- touchstone
def touchstone_run(rows: list[dict[str, str]], workers: int | None) -> tuple[float, Any]:
    from touchstone import evaluate
    from touchstone.evaluators.text import (
        BleuScoreEvaluator,
        ExactMatchEvaluator,
        F1ScoreEvaluator,
        GleuScoreEvaluator,
        RougeScoreEvaluator,
    )

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        result = evaluate(
            data=rows,
            evaluators={
                # the options of the reference loop's computations (sacrebleu BLEU, whole-text
                # Treebank tokens, SQuAD v2's empty-answer rule), not the SDK-compatible defaults
                "f1_score": F1ScoreEvaluator(empty_answers_agree=True),
                "exact_match": ExactMatchEvaluator(),
                "bleu": BleuScoreEvaluator(implementation="sacrebleu"),
                "rouge": RougeScoreEvaluator("rougeL"),
                "gleu": GleuScoreEvaluator(tokenizer="nltk"),
            },
            store=str(Path(tmp) / "runs.db"),
            workers=workers,
        )
        return time.perf_counter() - started, result


def per_metric_costs(rows: list[dict[str, str]]) -> dict[str, float]:
    """Microseconds per row of each evaluator's ``score_batch`` alone (one process, libraries loaded):
    the floor any engine pays for these metrics."""
    from touchstone.evaluators.text import (
        BleuScoreEvaluator,
        ExactMatchEvaluator,
        F1ScoreEvaluator,
        GleuScoreEvaluator,
        RougeScoreEvaluator,
    )

    costs = {}
    for name, ev in [
        ("f1", F1ScoreEvaluator(empty_answers_agree=True)),
        ("exact_match", ExactMatchEvaluator()),
        ("bleu", BleuScoreEvaluator(implementation="sacrebleu")),
        ("rougeL", RougeScoreEvaluator("rougeL")),
        ("gleu", GleuScoreEvaluator(tokenizer="nltk")),
    ]:
        ev.score_batch(rows[:10])  # imports
        started = time.perf_counter()
        ev.score_batch(rows)
        costs[name] = 1e6 * (time.perf_counter() - started) / len(rows)
    return costs


# ----------------------------------------------------------------------------- azure-ai-evaluation
SDK_SCRIPT = r"""
import json, sys, time
rows = json.load(sys.stdin)
import nltk
from nltk.tokenize import word_tokenize
def tokenize(text):  # punkt is not installed and cannot be downloaded: data-free Treebank tokens
    return word_tokenize(text, preserve_line=True)
import azure.ai.evaluation._common.utils as utils
utils.ensure_nltk_data_downloaded = lambda: None
from azure.ai.evaluation._evaluators._bleu import _bleu
from azure.ai.evaluation._evaluators._gleu import _gleu
_bleu.nltk_tokenize = tokenize
_gleu.nltk_tokenize = tokenize
from azure.ai.evaluation import (
    F1ScoreEvaluator, BleuScoreEvaluator, RougeScoreEvaluator, RougeType, GleuScoreEvaluator,
)
evs = [F1ScoreEvaluator(), BleuScoreEvaluator(), RougeScoreEvaluator(RougeType.ROUGE_L), GleuScoreEvaluator()]
for ev in evs:
    ev(response="warm up", ground_truth="warm up")
started = time.perf_counter()
for row in rows:
    for ev in evs:
        ev(response=row["response"], ground_truth=row["ground_truth"])
direct = time.perf_counter() - started
import os, tempfile
from azure.ai.evaluation import evaluate
with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "rows.jsonl")
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    started = time.perf_counter()
    evaluate(data=path, evaluators={"f1_score": evs[0], "bleu": evs[1], "rouge": evs[2], "gleu": evs[3]})
    via_evaluate = time.perf_counter() - started
print(json.dumps({"seconds": direct, "evaluate_seconds": via_evaluate, "rows": len(rows)}))
"""


def sdk_run(rows: list[dict[str, str]], python: str) -> dict[str, Any] | None:
    if not Path(python).exists():
        return None
    proc = subprocess.run(
        [python, "-c", SDK_SCRIPT], input=json.dumps(rows), capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        print(proc.stderr[-2000:], file=sys.stderr)
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--sdk-rows", type=int, default=None, help="rows for the SDK (default: all of them)")
    parser.add_argument("--sdk-python", default="/tmp/azvenv/bin/python")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--touchstone-only", action="store_true",
                        help="time touchstone's evaluate() alone (after a 1,000-row warm-up), with its CPU")
    args = parser.parse_args()

    rows = make_rows(args.rows)
    print(f"{len(rows)} rows, {os.cpu_count()} CPUs", flush=True)
    if args.touchstone_only:
        import resource

        touchstone_run(rows[:1000], args.workers)
        cpu = time.process_time()
        t_ts, _ = touchstone_run(rows, args.workers)
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        print(f"touchstone evaluate(): {t_ts:.1f} s; CPU: this process {time.process_time() - cpu:.1f} s, "
              f"worker processes {children.ru_utime + children.ru_stime:.1f} s")
        return

    costs = per_metric_costs(rows[:5000])
    print(
        "per-row CPU of each metric (score_batch, one process): "
        + ", ".join(f"{k} {v:.0f} us" for k, v in costs.items())
        + f"; total {sum(costs.values()):.0f} us",
        flush=True,
    )

    t_ref, ref, ref_corpus = reference_loop(rows)
    print(f"reference loop: {t_ref:.1f} s, {len(rows) / t_ref:,.0f} rows/s", flush=True)

    t_ts, result = touchstone_run(rows, args.workers)
    print(f"touchstone evaluate(): {t_ts:.1f} s, {len(rows) / t_ts:,.0f} rows/s", flush=True)

    # identical values, row by row
    keys = {
        "f1": "outputs.f1_score.f1_score",
        "em": "outputs.exact_match.exact_match",
        "bleu": "outputs.bleu.bleu",
        "rouge_p": "outputs.rouge.rouge_precision",
        "rouge_r": "outputs.rouge.rouge_recall",
        "rouge_f": "outputs.rouge.rouge_f1_score",
        "gleu": "outputs.gleu.gleu",
    }
    worst = 0.0
    for mine, theirs in zip(result.rows, ref, strict=True):
        for k, col in keys.items():
            worst = max(worst, abs(float(mine[col]) - theirs[k]))
    corpus = result.metrics["bleu.corpus_bleu"]
    worst = max(worst, abs(corpus - ref_corpus))
    assert worst <= 1e-9, f"values differ by {worst}"
    print(f"max |difference| over all rows and metrics (and corpus BLEU): {worst:.2e}")

    sdk = sdk_run(rows[: args.sdk_rows or len(rows)], args.sdk_python)
    if sdk:
        sdk_rate = sdk["rows"] / sdk["seconds"]
        print(
            f"azure-ai-evaluation (f1, bleu, rougeL, gleu; {sdk['rows']} rows): {sdk['seconds']:.1f} s, "
            f"{sdk_rate:,.0f} rows/s"
            + (
                f" -> {len(rows) / sdk_rate:.0f} s for {len(rows)} rows (extrapolated)"
                if sdk["rows"] < len(rows)
                else ""
            )
        )
        ev_rate = sdk["rows"] / sdk["evaluate_seconds"]
        print(
            f"azure-ai-evaluation evaluate() with the same four: {sdk['evaluate_seconds']:.1f} s, "
            f"{ev_rate:,.0f} rows/s" + (f" -> {len(rows) / ev_rate:.0f} s for {len(rows)} rows (extrapolated)"
                                        if sdk["rows"] < len(rows) else "")
        )
        print(f"speed-up over the SDK's evaluators called directly: {(len(rows) / t_ts) / sdk_rate:.1f}x")
        print(f"speed-up over the SDK's evaluate(): {(len(rows) / t_ts) / ev_rate:.1f}x")
    print(f"touchstone time / reference loop time: {t_ts / t_ref:.2f} (goal <= 1.2)")


if __name__ == "__main__":
    main()
