"""The RAG formulas against their written-out definitions (random and edge cases) and against ragas
0.4.3's scoring functions on the same verdicts (recorded once in ``golden/ragas_scores.json`` by
``golden/record_ragas_scores.py``)."""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

import pytest

from touchstone.evaluators.rag.answer_correctness import AnswerCorrectnessEvaluator
from touchstone.evaluators.rag.scoring import (
    average_precision,
    claim_fbeta,
    entity_recall,
    fbeta,
    supported_share,
    weighted_blend,
)

GOLDEN = json.loads((Path(__file__).parent / "golden" / "ragas_scores.json").read_text())


# ------------------------------------------------------------------ definitions, in exact arithmetic
def share_def(v: list[bool]) -> Fraction:
    return Fraction(sum(v), len(v))


def ap_def(v: list[bool]) -> Fraction:
    """AP = (1 / #useful) * Σ over useful ranks k of (#useful in ranks 1..k) / k."""
    useful = [k for k in range(1, len(v) + 1) if v[k - 1]]
    if not useful:
        return Fraction(0)
    return sum((Fraction(sum(v[:k]), k) for k in useful), Fraction(0)) / len(useful)


def fbeta_def(tp: int, fp: int, fn: int, beta: Fraction) -> Fraction:
    p = Fraction(tp, tp + fp) if tp + fp else Fraction(0)
    r = Fraction(tp, tp + fn) if tp + fn else Fraction(0)
    if p == 0 and r == 0:
        return Fraction(0)
    return (1 + beta**2) * p * r / (beta**2 * p + r)


def random_verdicts(rng: random.Random, low: int = 1, high: int = 15) -> list[bool]:
    return [rng.random() < rng.random() for _ in range(rng.randint(low, high))]


def test_supported_share_equals_definition() -> None:
    rng = random.Random(1)
    for _ in range(500):
        v = random_verdicts(rng)
        assert supported_share(v) == pytest.approx(float(share_def(v)), abs=1e-12)
    assert supported_share([]) is None  # no claims: the evaluator gives a documented outcome
    assert supported_share([True]) == 1.0 and supported_share([False]) == 0.0


def test_average_precision_equals_definition() -> None:
    rng = random.Random(2)
    for _ in range(500):
        v = random_verdicts(rng, 0)
        assert average_precision(v) == pytest.approx(float(ap_def(v)), abs=1e-12)
    assert average_precision([]) == 0.0
    assert average_precision([False, False]) == 0.0
    assert average_precision([False, True]) == 0.5
    assert average_precision([True, False, True]) == pytest.approx((1 + 2 / 3) / 2)


def test_entity_recall_equals_definition() -> None:
    rng = random.Random(3)
    names = [f"n{i}" for i in range(10)]
    for _ in range(500):
        ref = [rng.choice(names) for _ in range(rng.randint(1, 8))]  # duplicates count once
        ctx = [rng.choice(names) for _ in range(rng.randint(0, 8))]
        expected = Fraction(len(set(ref) & set(ctx)), len(set(ref)))
        assert entity_recall(ref, ctx) == pytest.approx(float(expected), abs=1e-12)
    assert entity_recall([], ["a"]) is None
    assert entity_recall(["a"], []) == 0.0


def test_fbeta_and_blend_equal_definition() -> None:
    rng = random.Random(4)
    for _ in range(500):
        tp, fp, fn = rng.randint(0, 7), rng.randint(0, 7), rng.randint(0, 7)
        beta = rng.choice([Fraction(1, 2), Fraction(1), Fraction(2), Fraction(3, 2)])
        assert fbeta(tp, fp, fn, float(beta)) == pytest.approx(float(fbeta_def(tp, fp, fn, beta)), abs=1e-12)
        response = [True] * tp + [False] * fp
        reference = [False] * fn + [True] * rng.randint(0, 3)
        rng.shuffle(response)
        expected = 1.0 if not response and not reference else float(fbeta_def(tp, fp, fn, beta))
        assert claim_fbeta(response, reference, float(beta)) == pytest.approx(expected, abs=1e-12)
        w = (rng.random(), rng.random())
        x = (rng.random(), rng.random())
        assert weighted_blend(x, w) == pytest.approx((w[0] * x[0] + w[1] * x[1]) / (w[0] + w[1]), abs=1e-12)
    assert claim_fbeta([], []) == 1.0  # neither text has a claim (as ragas)
    assert claim_fbeta([], [False]) == 0.0
    with pytest.raises(ValueError):
        weighted_blend([1.0, 1.0], [0.0, 0.0])


# ------------------------------------------------------------------ ragas 0.4.3, same verdicts
def test_golden_is_ragas_043() -> None:
    assert GOLDEN["ragas_version"] == "0.4.3"
    assert len(GOLDEN["faithfulness"]) >= 300


@pytest.mark.parametrize("metric", ["faithfulness", "context_recall"])
def test_share_equals_ragas(metric: str) -> None:
    for case in GOLDEN[metric]:
        assert abs(supported_share(case["verdicts"]) - case["ragas"]) < 1e-9


def test_average_precision_equals_ragas() -> None:
    for case in GOLDEN["context_precision"]:
        assert abs(average_precision(case["verdicts"]) - case["ragas"]) < 1e-9


def test_entity_recall_equals_ragas() -> None:
    """ragas divides by ``len(reference) + 1e-8``; with that smoothing factor taken out, the values
    are equal (the recorded reference lists hold distinct entities, as an entity list does)."""
    for case in GOLDEN["context_entity_recall"]:
        ref = case["reference"]
        ours = entity_recall(ref, case["context"])
        assert ours is not None
        assert abs(ours * len(ref) / (len(ref) + 1e-8) - case["ragas"]) < 1e-9
        assert abs(ours - case["ragas"]) < 1e-7


def test_fbeta_equals_ragas() -> None:
    for case in GOLDEN["fbeta"]:
        response = [True] * case["tp"] + [False] * case["fp"]
        reference = [False] * case["fn"]
        ours = claim_fbeta(response, reference, case["beta"]) if response or reference else fbeta(0, 0, 0)
        assert abs(ours - case["ragas"]) < 1e-9
        assert abs(fbeta(case["tp"], case["fp"], case["fn"], case["beta"]) - case["ragas"]) < 1e-9


def test_answer_correctness_defaults_are_ragas() -> None:
    defaults = GOLDEN["answer_correctness_defaults"]
    ev = AnswerCorrectnessEvaluator({"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "x"},
                                    weights=(0.75, 0.0))
    assert list(ev.weights) == [0.75, 0.0]
    import inspect

    params = inspect.signature(AnswerCorrectnessEvaluator.__init__).parameters
    assert list(params["weights"].default) == defaults["weights"]
    assert params["beta"].default == defaults["beta"]
