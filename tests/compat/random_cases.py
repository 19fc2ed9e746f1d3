"""Random and adversarial inputs for the lexical and document-retrieval evaluators, generated from a
fixed seed. ``record_random.py`` runs them through azure-ai-evaluation 1.18.10 (``golden_random/``);
``test_random_parity.py`` runs them through touchstone and compares. Plain Python (no touchstone, no
SDK imports), so both environments can import it."""

from __future__ import annotations

import random
from typing import Any

SEED = 20260511

_WORDS_TEXT = (
    "the a an cat cats dog dogs sat sits sitting mat on in of and to is was be capital Tokyo Japan "
    "quick brown fox jumps jumped over lazy river bank run running runs ran house home big large small "
    "car automobile happy glad answer question model response 3 42 3.5 1,000 2024 don't can't it's "
    "U.S. Mr. Dr. e.g. i.e. p.m. etc. Inc. St. vs. No. Jan. A. B. J. K. Smith"
)
WORDS = _WORDS_TEXT.split()
PUNCT = [
    ".", ",", "!", "?", ";", ":", "...", "--", "-", "'", '"', "(", ")", "[", "]",
    "$", "%", "&", "/", "``", "''",
]
UNICODE = [
    "café", "naïve", "Zürich", "東京", "日本の首都", "Москва", "مرحبا", "שלום", "😀", "☃", "€5", "3.5€",
    "™", "—", "“quoted”", "‘single’", "½", "١٢٣", "ß", "Ünïcödé", "e\u0301", "\u00a0", "…", "«ok»",
]
SPECIAL = ["", " ", "   ", "\n", "\t", "!!!", "...", "a", "the", "an", "A", "The an a", "&amp;", "<skipped>"]


def _sentence(rng: random.Random, unicode_share: float) -> str:
    parts: list[str] = []
    for _ in range(rng.randint(1, 14)):
        r = rng.random()
        if r < unicode_share:
            parts.append(rng.choice(UNICODE))
        elif r < unicode_share + 0.12:
            parts.append(rng.choice(PUNCT))
        else:
            word = rng.choice(WORDS)
            parts.append(word.capitalize() if rng.random() < 0.15 else word)
    text = " ".join(parts)
    if rng.random() < 0.3:  # glue punctuation to words, as written text does
        text = text.replace(" .", ".").replace(" ,", ",").replace(" !", "!")
    return text + rng.choice(["", ".", ".", "!", "?", " .", "\n"])


def text(rng: random.Random, unicode_share: float = 0.0) -> str:
    """One random text: a special value, one or several sentences, or a long text."""
    r = rng.random()
    if r < 0.08:
        return rng.choice(SPECIAL)
    if r < 0.12:
        word = rng.choice(WORDS)
        return " ".join([word] * rng.randint(2, 8))
    n = rng.choice([1, 1, 1, 2, 3, 5]) if r < 0.97 else rng.randint(20, 40)
    sep = rng.choice([" ", " ", "  ", "\n"])
    return sep.join(_sentence(rng, unicode_share) for _ in range(n))


def _pair(rng: random.Random, unicode_share: float) -> dict[str, str]:
    truth = text(rng, unicode_share)
    r = rng.random()
    if r < 0.15:
        response = truth
    elif r < 0.45 and truth.split():  # a perturbed copy: shares n-grams
        tokens = truth.split(" ")
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(tokens))
            op = rng.random()
            if op < 0.4:
                tokens[i] = rng.choice(WORDS)
            elif op < 0.7:
                del tokens[i]
                if not tokens:
                    tokens = [rng.choice(WORDS)]
            else:
                tokens.insert(i, rng.choice(WORDS))
        response = " ".join(tokens)
    else:
        response = text(rng, unicode_share)
    return {"response": response, "ground_truth": truth}


def lexical_cases() -> list[dict[str, Any]]:
    """Cases ``{"id", "evaluator", "init", "inputs"}`` for F1, BLEU, GLEU, METEOR and ROUGE."""
    rng = random.Random(SEED)
    cases: list[dict[str, Any]] = []
    plan: list[tuple[str, list[dict[str, Any]]]] = [
        ("F1ScoreEvaluator", [{}, {"threshold": 0.3}]),
        ("BleuScoreEvaluator", [{}, {"threshold": 0.1}]),
        ("GleuScoreEvaluator", [{}, {"threshold": 0.2}]),
        ("MeteorScoreEvaluator", [{}, {"alpha": 0.8, "beta": 2.0, "gamma": 0.3, "threshold": 0.4}]),
        (
            "RougeScoreEvaluator",
            [{"rouge_type": f"rouge{t}"} for t in ("1", "2", "3", "4", "5", "L", "Lsum")]
            + [{
                "rouge_type": "rougeL",
                "precision_threshold": 0.2,
                "recall_threshold": 0.7,
                "f1_score_threshold": 0.4,
            }],
        ),
    ]
    for name, inits in plan:
        for i in range(60):
            unicode_share = 0.0 if i < 40 else 0.25  # ASCII first (word_tokenize), then NIST text
            cases.append({
                "id": f"{name}-{i}",
                "evaluator": name,
                "init": inits[i % len(inits)],
                "inputs": _pair(rng, unicode_share),
            })
    return cases


def _retrieval_inputs(rng: random.Random, lo: int, hi: int) -> dict[str, Any]:
    ids = [f"d{i}" for i in range(rng.randint(1, 12))]
    labelled = rng.sample(ids, rng.randint(1, len(ids)))
    qrels = [{"document_id": d, "query_relevance_label": rng.randint(lo, hi)} for d in labelled]
    if rng.random() < 0.1 and qrels:  # a document labelled twice
        qrels.append({"document_id": qrels[0]["document_id"], "query_relevance_label": rng.randint(lo, hi)})
    pool = ids + [f"x{i}" for i in range(rng.randint(0, 4))]  # x*: never labelled (holes)
    retrieved_ids = rng.sample(pool, rng.randint(0, len(pool)))
    scores = [round(rng.uniform(0, 50), 1) for _ in retrieved_ids]
    if rng.random() < 0.4 and len(scores) > 1:  # ties in relevance_score
        scores = [float(rng.randint(1, 3)) for _ in retrieved_ids]
    if rng.random() < 0.2:
        scores = [int(s) for s in scores]
    retrieved = [{"document_id": d, "relevance_score": s} for d, s in zip(retrieved_ids, scores, strict=True)]
    return {"retrieval_ground_truth": qrels, "retrieved_documents": retrieved}


def retrieval_cases() -> list[dict[str, Any]]:
    """Cases for DocumentRetrievalEvaluator: random labels, retrieved lists with ties, holes, empty
    lists, several label ranges and thresholds."""
    rng = random.Random(SEED + 1)
    inits: list[dict[str, Any]] = [
        {},
        {"ground_truth_label_min": 0, "ground_truth_label_max": 2},
        {"ground_truth_label_min": 1, "ground_truth_label_max": 5},
        {"ground_truth_label_min": 0, "ground_truth_label_max": 12},
        {"ground_truth_label_min": -2, "ground_truth_label_max": 3},
        {
            "ndcg_threshold": 0.6, "xdcg_threshold": 40.0, "fidelity_threshold": 0.4,
            "top1_relevance_threshold": 3.0, "top3_max_relevance_threshold": 3.0,
            "total_retrieved_documents_threshold": 4, "total_ground_truth_documents_threshold": 4,
        },
    ]
    cases: list[dict[str, Any]] = []
    for i in range(120):
        init = inits[i % len(inits)]
        lo, hi = init.get("ground_truth_label_min", 0), init.get("ground_truth_label_max", 4)
        cases.append({
            "id": f"DocumentRetrievalEvaluator-{i}",
            "evaluator": "DocumentRetrievalEvaluator",
            "init": init,
            "inputs": _retrieval_inputs(rng, lo, hi),
        })
    return cases


def all_cases() -> list[dict[str, Any]]:
    return lexical_cases() + retrieval_cases()
