"""answer_relevancy's and context_relevance's formulas against their written-out definitions (random
and edge cases) and against ragas 0.4.3's scoring functions (``golden/ragas_relevance.json``,
recorded by ``golden/record_ragas_relevance.py``)."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from touchstone.evaluators.rag.answer_relevancy import relevancy
from touchstone.evaluators.rag.context_relevance import rating_mean

GOLDEN = json.loads((Path(__file__).parent / "golden" / "ragas_relevance.json").read_text(encoding="utf-8"))


def definition_relevancy(q: list[float], gen: list[list[float]], flags: list[bool]) -> float:
    """(1/N) Σ cos(q, g_i), times 0 when every flag is set; a zero vector has cosine 0."""
    def cos(a: list[float], b: list[float]) -> float:
        na = math.sqrt(sum(x * x for x in a))
        nb = math.sqrt(sum(x * x for x in b))
        return 0.0 if na == 0 or nb == 0 else sum(x * y for x, y in zip(a, b, strict=True)) / (na * nb)

    mean = sum(cos(q, g) for g in gen) / len(gen)
    return 0.0 if flags and all(flags) else mean


def test_relevancy_equals_definition_on_random_cases() -> None:
    rng = random.Random(7)
    for _ in range(500):
        dim = rng.randint(1, 12)
        q = [rng.uniform(-1, 1) for _ in range(dim)]
        gen = [[rng.uniform(-1, 1) for _ in range(dim)] for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.1:
            gen[0] = [0.0] * dim
        flags = [rng.random() < 0.4 for _ in gen]
        got = relevancy(np.array(q), [np.array(g) for g in gen], flags)
        assert got == pytest.approx(definition_relevancy(q, gen, flags), abs=1e-6)


@pytest.mark.parametrize(
    ("q", "gen", "flags", "expected"),
    [
        ([1.0, 0.0], [[1.0, 0.0]], [False], 1.0),  # the same question
        ([1.0, 0.0], [[0.0, 1.0]], [False], 0.0),  # orthogonal
        ([1.0, 0.0], [[-1.0, 0.0]], [False], -1.0),  # opposed: a cosine, as ragas
        ([1.0, 0.0], [[1.0, 0.0], [0.0, 1.0]], [True, False], 0.5),  # not all noncommittal
        ([1.0, 0.0], [[1.0, 0.0], [1.0, 0.0]], [True, True], 0.0),  # all noncommittal
        ([0.0, 0.0], [[1.0, 0.0]], [False], 0.0),  # zero question vector: cosine 0 (ragas: NaN)
        ([1.0, 0.0], [[0.0, 0.0], [1.0, 0.0]], [False, False], 0.5),  # a zero generated vector
    ],
)
def test_relevancy_edge_cases(q: list[float], gen: list[list[float]], flags: list[bool],
                              expected: float) -> None:
    value = relevancy(np.array(q), [np.array(g) for g in gen], flags)
    assert value == pytest.approx(expected)
    assert not math.isnan(value)


def test_relevancy_needs_questions() -> None:
    with pytest.raises(ValueError, match="no generated question"):
        relevancy(np.array([1.0]), [], [])


def test_relevancy_equals_ragas_calculate_score() -> None:
    cases: list[dict[str, Any]] = GOLDEN["answer_relevancy"]
    assert GOLDEN["ragas_version"] == "0.4.3" and len(cases) == 300
    assert any(all(c["noncommittal"]) for c in cases) and any(not any(c["noncommittal"]) for c in cases)
    for c in cases:
        got = relevancy(np.array(c["question"]), [np.array(g) for g in c["generated"]],
                        [bool(f) for f in c["noncommittal"]])
        assert got == pytest.approx(c["ragas"], abs=1e-9)


def definition_rating_mean(ratings: list[int | None]) -> float | None:
    """Mean of rating/2 over the ratings present; None when none is."""
    present = [r / 2 for r in ratings if r is not None]
    return sum(present) / len(present) if present else None


def test_rating_mean_equals_definition() -> None:
    rng = random.Random(11)
    for _ in range(300):
        ratings: list[int | None] = [rng.choice([0, 1, 2, None]) for _ in range(rng.randint(1, 3))]
        assert rating_mean(ratings) == definition_rating_mean(ratings)
    assert rating_mean([None, None]) is None
    assert rating_mean([]) is None
    assert rating_mean([2, 2]) == 1.0 and rating_mean([0, 1]) == 0.25 and rating_mean([None, 1]) == 0.5
    assert rating_mean([1.5, 2.0]) == pytest.approx(0.875)  # log-probability expectations


def test_rating_mean_equals_ragas_average_scores() -> None:
    cases: list[dict[str, Any]] = GOLDEN["context_relevance"]
    assert any(None in c["ratings"] for c in cases)
    for c in cases:
        assert rating_mean(c["ratings"]) == pytest.approx(c["ragas"], abs=1e-12)
        if None not in c["ratings"]:
            assert rating_mean(c["ratings"]) == pytest.approx(c["ragas_legacy"], abs=1e-12)
