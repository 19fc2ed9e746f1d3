"""ROUGE precision, recall and F1 with rouge-score's tokenizer and formulas: ROUGE-N n-gram counts,
ROUGE-L by a bit-parallel LCS (same value as rouge-score's dynamic programme, linear in memory),
ROUGE-Lsum by rouge-score's summary-level LCS."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from enum import Enum
from typing import Any

from touchstone.evaluators.registry import register
from touchstone.evaluators.text.base import OverlapEvaluator
from touchstone.scores import Outcome


class RougeType(str, Enum):
    """ROUGE variants (the compatible SDK's names)."""

    ROUGE_1 = "rouge1"
    ROUGE_2 = "rouge2"
    ROUGE_3 = "rouge3"
    ROUGE_4 = "rouge4"
    ROUGE_5 = "rouge5"
    ROUGE_L = "rougeL"
    ROUGE_L_SUM = "rougeLsum"


_ROUGE_N = re.compile(r"rouge([1-9])$")


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists.

    Bit-parallel (Allison-Dix / Hyyro): one big-integer step per token of the shorter list, so it
    is linear in memory and fast on very long texts. The LCS length is unique, so this equals the
    last cell of rouge-score's dynamic-programming table."""
    if len(a) > len(b):
        a, b = b, a
    if not a:
        return 0
    masks: dict[str, int] = {}
    for i, token in enumerate(b):
        masks[token] = masks.get(token, 0) | (1 << i)
    full = (1 << len(b)) - 1
    v = full
    for token in a:
        m = masks.get(token)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(b) - v.bit_count()


def _fmeasure(precision: float, recall: float) -> float:
    # rouge_score.scoring.fmeasure
    return 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0


def _ngram_counts(tokens: list[str], n: int) -> Counter[tuple[str, ...]]:
    if n == 1:
        return Counter((t,) for t in tokens)
    return Counter(zip(*(tokens[i:] for i in range(n)), strict=False))


@register
class RougeScoreEvaluator(OverlapEvaluator):
    """ROUGE precision, recall and F1 as Google's rouge-score computes them.

    ``rouge_type``: ``rouge1``-``rouge9`` (n-gram overlap), ``rougeL`` (longest common subsequence),
    ``rougeLsum`` (summary-level LCS over newline-separated sentences). ``use_stemmer`` applies the
    Porter stemmer to tokens longer than 3 characters, as rouge-score does. With several ground
    truths, the one with the highest F1 is reported (rouge-score's ``score_multi``).

    Outputs follow the compatible SDK: ``rouge`` / ``rouge_score`` (= F1) with its pass/fail keys and
    ``rouge_properties``, plus the flat ``rouge_precision``, ``rouge_recall``, ``rouge_f1_score`` and
    their ``_result`` / ``_threshold``."""

    metric = "rouge"
    prefix = "rouge"
    score_key = "rouge"
    secondary = ("rouge_precision", "rouge_recall", "rouge_f1_score")
    description = "ROUGE precision/recall/F1 (rouge-score): rouge1-5, rougeL, rougeLsum"

    def __init__(
        self,
        rouge_type: RougeType | str = RougeType.ROUGE_1,
        *,
        precision_threshold: float = 0.5,
        recall_threshold: float = 0.5,
        f1_score_threshold: float = 0.5,
        threshold: float | None = None,
        use_stemmer: bool = False,
    ) -> None:
        f1_threshold = f1_score_threshold if threshold is None else float(threshold)
        super().__init__(threshold=f1_threshold)
        name = rouge_type.value if isinstance(rouge_type, Enum) else str(rouge_type)
        match = _ROUGE_N.match(name)
        if not match and name not in ("rougeL", "rougeLsum"):
            raise ValueError(f"unknown rouge_type {name!r}; expected rouge1-rouge9, rougeL or rougeLsum")
        self.rouge_type = name
        self._n = int(match.group(1)) if match else 0
        self.use_stemmer = use_stemmer
        self.thresholds = {
            "precision": float(precision_threshold),
            "recall": float(recall_threshold),
            "f1_score": float(f1_threshold),
        }

    def options(self) -> dict[str, Any]:
        return {
            **super().options(),
            "rouge_type": self.rouge_type,
            "use_stemmer": self.use_stemmer,
            "thresholds": dict(self.thresholds),
        }

    @property
    def _tokenize(self) -> Any:
        fn = self.__dict__.get("_lazy_tokenize")
        if fn is None:
            from rouge_score.tokenizers import DefaultTokenizer

            fn = self.__dict__["_lazy_tokenize"] = DefaultTokenizer(self.use_stemmer).tokenize
        return fn

    def prf(self, response: str, truth: str) -> tuple[float, float, float]:
        """(precision, recall, F1) of ``response`` against one ground truth."""
        tokenize = self._tokenize
        if self.rouge_type == "rougeLsum":
            from rouge_score.rouge_scorer import _summary_level_lcs

            targets = [tokenize(s) for s in truth.split("\n") if s]
            predictions = [tokenize(s) for s in response.split("\n") if s]
            score = _summary_level_lcs(targets, predictions)
            return float(score.precision), float(score.recall), float(score.fmeasure)
        target = tokenize(truth)
        prediction = tokenize(response)
        if self._n:
            t_counts = _ngram_counts(target, self._n)
            p_counts = _ngram_counts(prediction, self._n)
            overlap = sum((t_counts & p_counts).values())
            precision = overlap / max(sum(p_counts.values()), 1)
            recall = overlap / max(sum(t_counts.values()), 1)
        else:
            if not target or not prediction:
                return 0.0, 0.0, 0.0
            lcs = lcs_length(target, prediction)
            precision = lcs / len(prediction)
            recall = lcs / len(target)
        return precision, recall, _fmeasure(precision, recall)

    def value(self, response: str, truths: list[str]) -> float:
        return self.best(response, truths)[2]

    def best(self, response: str, truths: list[str]) -> tuple[float, float, float]:
        """The scores against the ground truth with the highest F1 (the first one on ties)."""
        best: tuple[float, float, float] | None = None
        for truth in truths:
            scores = self.prf(response, truth)
            if best is None or scores[2] > best[2]:
                best = scores
        assert best is not None
        return best

    def outputs(self, response: str, truths: list[str]) -> Outcome:
        return self._outputs(*self.best(response, truths))

    def _outputs(self, precision: float, recall: float, f1: float) -> Outcome:
        flat: dict[str, Any] = {"rouge_precision": precision, "rouge_recall": recall, "rouge_f1_score": f1}
        for name, value in (("precision", precision), ("recall", recall), ("f1_score", f1)):
            passed = value >= self.thresholds[name]
            flat[f"rouge_{name}_result"] = "pass" if passed else "fail"
            flat[f"rouge_{name}_passed"] = passed
            flat[f"rouge_{name}_threshold"] = self.thresholds[name]
        return self.result(f1, properties=dict(flat), **flat)
