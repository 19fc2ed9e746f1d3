"""chrF and chrF++ as sacrebleu computes them; corpus chrF from the statistics summed over rows."""

from __future__ import annotations

from typing import Any

from touchstone.evaluators.registry import register
from touchstone.evaluators.text.base import SacrebleuEvaluator, sum_stats


@register
class ChrfScoreEvaluator(SacrebleuEvaluator):
    """chrF (``word_order=0``) or chrF++ (``word_order=2``) as sacrebleu computes them, divided by 100.
    The summary adds ``corpus_chrf`` from the statistics summed over rows."""

    metric = "chrf_score"
    prefix = "chrf"
    score_key = "chrf"
    corpus_key = "corpus_chrf"
    description = "chrF / chrF++ (sacrebleu) / 100; corpus chrF in the summary"

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        word_order: int = 0,
        char_order: int = 6,
        beta: int = 2,
        lowercase: bool = False,
        whitespace: bool = False,
        eps_smoothing: bool = False,
    ) -> None:
        super().__init__(threshold=threshold)
        self.word_order = int(word_order)
        self.char_order = int(char_order)
        self.beta = int(beta)
        self.lowercase = lowercase
        self.whitespace = whitespace
        self.eps_smoothing = eps_smoothing

    def options(self) -> dict[str, Any]:
        import sacrebleu

        return {
            **super().options(),
            "word_order": self.word_order,
            "char_order": self.char_order,
            "beta": self.beta,
            "lowercase": self.lowercase,
            "whitespace": self.whitespace,
            "eps_smoothing": self.eps_smoothing,
            "sacrebleu": sacrebleu.__version__,
        }

    def _make_metric(self) -> Any:
        from sacrebleu.metrics.chrf import CHRF

        return CHRF(
            char_order=self.char_order,
            word_order=self.word_order,
            beta=self.beta,
            lowercase=self.lowercase,
            whitespace=self.whitespace,
            eps_smoothing=self.eps_smoothing,
        )

    def corpus_value(self, stats: list[list[int]]) -> float:
        return float(self._metric._compute_score_from_stats(sum_stats(stats)).score) / 100.0
