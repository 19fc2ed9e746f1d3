"""Lexical overlap metrics defined by SQuAD: token F1 and exact match (SPEC 3.3)."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any, ClassVar

from touchstone.data.kinds import as_text_list
from touchstone.evaluators.base import RESPONSE_AND_GROUND_TRUTHS, Evaluator
from touchstone.evaluators.registry import register
from touchstone.scores import Outcome

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD normalisation: lowercase, drop ASCII punctuation, drop a/an/the, collapse whitespace."""
    return " ".join(_ARTICLES.sub(" ", text.lower().translate(_PUNCTUATION)).split())


def token_f1(prediction: str, truth: str, *, empty_answers_agree: bool = False) -> float:
    """SQuAD token F1 (multiset overlap of the normalised tokens).

    A side with no token after normalisation shares no token, so the F1 is 0.0 -- the compatible
    SDK's value, also when both sides are empty. ``empty_answers_agree=True`` applies SQuAD v2's rule
    instead: two empty answers agree (1.0)."""
    pred = normalize_answer(prediction).split()
    gold = normalize_answer(truth).split()
    if empty_answers_agree and not pred and not gold:
        return 1.0
    same = sum((Counter(pred) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, truth: str, normalize: bool = True) -> float:
    if normalize:
        return float(normalize_answer(prediction) == normalize_answer(truth))
    return float(prediction == truth)


@register
class F1ScoreEvaluator(Evaluator):
    """Token F1 between response and ground truth after SQuAD normalisation; max over ground truths.

    Texts with no token left after normalisation (``"a"``, ``"!!!"``) score 0.0, as in the compatible
    SDK; ``empty_answers_agree=True`` scores two such texts 1.0 (SQuAD v2's rule for unanswerable
    questions)."""

    metric = "f1_score"
    prefix = "f1_score"
    score_key = "f1_score"
    inputs = RESPONSE_AND_GROUND_TRUTHS
    description = "SQuAD token F1 between response and ground truth (max over several)"
    value_range = "0-1"
    default_threshold: ClassVar[float | None] = 0.5

    def __init__(self, *, threshold: float = 0.5, empty_answers_agree: bool = False) -> None:
        super().__init__(threshold=threshold)
        self.empty_answers_agree = empty_answers_agree

    def options(self) -> dict[str, Any]:
        return {**super().options(), "empty_answers_agree": self.empty_answers_agree}

    def _score(self, **inputs: Any) -> Outcome:
        response: str = inputs["response"]
        agree = self.empty_answers_agree
        truths = as_text_list(inputs["ground_truth"])
        return self.result(max(token_f1(response, gt, empty_answers_agree=agree) for gt in truths))


@register
class ExactMatchEvaluator(Evaluator):
    """1 when the response equals one of the ground truths after SQuAD normalisation (or exactly,
    with ``normalize=False``), else 0."""

    metric = "exact_match"
    prefix = "exact_match"
    score_key = "exact_match"
    inputs = RESPONSE_AND_GROUND_TRUTHS
    description = "response equals a ground truth after SQuAD normalisation"
    value_range = "0/1"
    default_threshold: ClassVar[float | None] = 1.0

    def __init__(self, *, threshold: float = 1.0, normalize: bool = True) -> None:
        super().__init__(threshold=threshold)
        self.normalize = normalize

    def options(self) -> dict[str, Any]:
        return {**super().options(), "normalize": self.normalize}

    def _score(self, **inputs: Any) -> Outcome:
        response: str = inputs["response"]
        truths = as_text_list(inputs["ground_truth"])
        return self.result(max(exact_match(response, gt, self.normalize) for gt in truths))
