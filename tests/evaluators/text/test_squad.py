"""f1_score and exact_match against the SQuAD definition, written out here independently."""

from __future__ import annotations

import collections
import random
import re
import string

import pytest

from touchstone import ExactMatchEvaluator, F1ScoreEvaluator
from touchstone.evaluators.text import normalize_answer


# --- the SQuAD v2.0 official evaluation script's definitions, as published -----------------------
def squad_normalize(s: str) -> str:
    def remove_articles(text: str) -> str:
        regex = re.compile(r"\b(a|an|the)\b", re.UNICODE)
        return re.sub(regex, " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def squad_tokens(s: str) -> list[str]:
    return squad_normalize(s).split() if s else []


def squad_exact(a_gold: str, a_pred: str) -> int:
    return int(squad_normalize(a_gold) == squad_normalize(a_pred))


def squad_f1(a_gold: str, a_pred: str) -> float:
    gold_toks = squad_tokens(a_gold)
    pred_toks = squad_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


# --- generated cases --------------------------------------------------------------------------------
VOCAB = [
    "the", "The", "THE", "a", "A", "an", "An", "cat", "Cat", "sat", "mat", "on", "théâtre", "naïve", "日本",
    "東京", "über", "Straße", "is", "was", "42", "3.14", "co-op", "don't", "e-mail", "", " ", "\t", "\n",
    "!", "?", ".", ",", "...", "—", "“quoted”", "'s", "(x)", "[y]", "a.b", "an,", "the!", "ÅNGSTRÖM", "ǅ",
    "\u00a0", "\u2003", "emoji😀", "ａｂｃ", "another", "theatre", "and", "antenna",
]


def random_text(rng: random.Random) -> str:
    n = rng.choice([0, 0, 1, 1, 2, 3, 5, 8, 13])
    seps = [" ", " ", " ", "", "  ", "\t", "\n", ",", "."]
    return "".join(rng.choice(VOCAB) + rng.choice(seps) for _ in range(n))


ADVERSARIAL = [
    ("", ""), ("", "cat"), ("cat", ""), ("   ", "   "), ("!!!", "..."), ("!!!", "cat"), ("the", "a"),
    ("The a an", ""), ("cat cat cat", "cat"), ("cat", "cat cat cat"), ("日本 東京", "東京 日本"),
    ("naïve café", "NAÏVE CAFÉ"), ("co-op", "coop"), ("don't", "dont"), ("an apple", "apple"),
    ("theatre", "the atre"), ("x" * 100_000, "x" * 100_000), ("\u00a0cat\u2003", "cat"),
]


def cases(n: int = 2000) -> list[tuple[str, list[str]]]:
    rng = random.Random(1234)
    out = [(p, [g]) for p, g in ADVERSARIAL]
    for _ in range(n):
        k = rng.choice([1, 1, 1, 2, 3])
        out.append((random_text(rng), [random_text(rng) for _ in range(k)]))
    return out


@pytest.mark.parametrize("chunk", range(4))
def test_f1_and_exact_match_equal_squad_definition(chunk: int) -> None:
    # SQuAD v2's official script (two empty answers agree) is the option; the default is the SDK's 0.0
    f1 = F1ScoreEvaluator(empty_answers_agree=True)
    sdk_f1 = F1ScoreEvaluator()
    em = ExactMatchEvaluator()
    all_cases = cases()
    for pred, truths in all_cases[chunk::4]:
        expected_f1 = max(squad_f1(g, pred) for g in truths)
        expected_em = max(squad_exact(g, pred) for g in truths)
        gt: str | list[str] = truths[0] if len(truths) == 1 else truths
        assert f1(response=pred, ground_truth=gt)["f1_score"] == pytest.approx(expected_f1, abs=1e-12), (
            pred,
            truths,
        )
        assert em(response=pred, ground_truth=gt)["exact_match"] == expected_em, (pred, truths)
        expected_sdk = max(
            0.0 if not squad_tokens(g) and not squad_tokens(pred) else squad_f1(g, pred) for g in truths
        )
        assert sdk_f1(response=pred, ground_truth=gt)["f1_score"] == pytest.approx(expected_sdk, abs=1e-12)


def test_normalisation_matches_squad() -> None:
    for pred, truths in cases(500):
        for text in [pred, *truths]:
            assert normalize_answer(text) == squad_normalize(text)


def test_threshold_and_keys() -> None:
    out = F1ScoreEvaluator(threshold=0.9)(response="the cat sat", ground_truth="cat sat down")
    assert out["f1_score"] == pytest.approx(0.8)
    assert out["f1_score_result"] == "fail" and out["f1_score_passed"] is False
    assert out["f1_score_threshold"] == 0.9
    assert set(out) == {
        "f1_score", "f1_score_score", "f1_score_passed", "f1_score_result", "f1_score_reason",
        "f1_score_status", "f1_score_threshold", "f1_score_properties",
    }


def test_strict_exact_match() -> None:
    em = ExactMatchEvaluator(normalize=False)
    assert em(response="The cat.", ground_truth="the cat")["exact_match"] == 0.0
    assert em(response="the cat", ground_truth=["x", "the cat"])["exact_match"] == 1.0


def test_bad_call_inputs_raise_typed_error() -> None:
    from touchstone import InputValidationError

    with pytest.raises(InputValidationError, match="ground_truth"):
        F1ScoreEvaluator()(response="x")
    with pytest.raises(InputValidationError, match="expected a string"):
        F1ScoreEvaluator()(response=42, ground_truth="x")
