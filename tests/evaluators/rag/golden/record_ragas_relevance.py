"""Record ragas 0.4.3's answer_relevancy and context_relevance scoring on random inputs into
``ragas_relevance.json``.

Run once with a Python that has ragas 0.4.3 (not touchstone's venv):

    /tmp/ragasvenv/bin/python tests/evaluators/rag/golden/record_ragas_relevance.py

answer_relevancy: random embeddings (the question's and 1-5 generated questions'), random
noncommittal flags, scored by ragas' ``ResponseRelevancy._calculate_score`` with an embeddings object
that returns those vectors. context_relevance: random 0/1/2 ratings (some missing, NaN to ragas)
averaged by ragas' ``ContextRelevance._average_scores(r1 / 2, r2 / 2)`` (the collections metric) and
the legacy ``average_scores``. ``tests/evaluators/rag/test_relevance_formulas.py`` compares touchstone's
functions with these values."""

from __future__ import annotations

import json
import math
import random
import sys
import types
from pathlib import Path
from typing import Any

# ragas 0.4.3 imports a module that langchain-community 0.4 no longer ships; nothing here uses it
for name, attr in (("langchain_community.chat_models.vertexai", "ChatVertexAI"),):
    stub = types.ModuleType(name)
    setattr(stub, attr, type(attr, (), {}))
    sys.modules.setdefault(name, stub)

import ragas  # noqa: E402
from ragas.metrics._answer_relevance import ResponseRelevanceOutput, ResponseRelevancy  # noqa: E402
from ragas.metrics._nv_metrics import ContextRelevance as LegacyContextRelevance  # noqa: E402
from ragas.metrics.collections.context_relevance.metric import ContextRelevance  # noqa: E402

SEED = 20250611
N = 300


class FixedEmbeddings:
    """Returns the vectors recorded for each text."""

    def __init__(self, vectors: dict[str, list[float]]) -> None:
        self.vectors = vectors

    def embed_query(self, text: str) -> list[float]:
        return self.vectors[text]

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [self.vectors[t] for t in texts]


def answer_relevancy_cases(rng: random.Random) -> list[dict[str, Any]]:
    metric = ResponseRelevancy()
    cases = []
    for i in range(N):
        dim = rng.choice([3, 8, 16])
        n = rng.randint(1, 5)
        vec = {f"q{i}": [rng.gauss(0, 1) for _ in range(dim)]}
        gen = [f"g{i}_{j}" for j in range(n)]
        for g in gen:
            vec[g] = [rng.gauss(0, 1) for _ in range(dim)]
        flags = [int(rng.random() < 0.3) for _ in range(n)]
        if rng.random() < 0.15:
            flags = [1] * n
        metric.embeddings = FixedEmbeddings(vec)
        answers = [ResponseRelevanceOutput(question=g, noncommittal=f)
                   for g, f in zip(gen, flags, strict=True)]
        score = float(metric._calculate_score(answers, {"user_input": f"q{i}"}))
        cases.append({"question": vec[f"q{i}"], "generated": [vec[g] for g in gen], "noncommittal": flags,
                      "ragas": score})
    return cases


def context_relevance_cases(rng: random.Random) -> list[dict[str, Any]]:
    metric = ContextRelevance.__new__(ContextRelevance)  # no LLM needed for the averaging
    legacy = LegacyContextRelevance()
    cases = []
    for _ in range(N):
        ratings: list[int | None] = [rng.choice([0, 1, 2]) for _ in range(2)]
        if rng.random() < 0.2:
            ratings[rng.randrange(2)] = None
        scaled = [math.nan if r is None else r / 2.0 for r in ratings]
        value = float(metric._average_scores(scaled[0], scaled[1]))
        old = float(legacy.average_scores(scaled[0], scaled[1]))
        cases.append({"ratings": ratings, "ragas": value, "ragas_legacy": None if math.isnan(old) else old})
    return cases


def main() -> None:
    rng = random.Random(SEED)
    doc = {"ragas_version": ragas.__version__, "seed": SEED,
           "answer_relevancy": answer_relevancy_cases(rng),
           "context_relevance": context_relevance_cases(rng)}
    out = Path(__file__).with_name("ragas_relevance.json")
    out.write_text(json.dumps(doc, indent=None) + "\n", encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
