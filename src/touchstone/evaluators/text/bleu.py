"""Sentence and corpus BLEU: nltk's ``sentence_bleu`` with smoothing method 4 (the compatible SDK's
value) or sacrebleu's sentence BLEU; the corpus score is always sacrebleu's, from summed statistics."""

from __future__ import annotations

from typing import Any

from touchstone.evaluators.registry import register
from touchstone.evaluators.text.base import SacrebleuEvaluator, sum_stats
from touchstone.evaluators.text.tokenize import WordTokenizer
from touchstone.scores import Outcome

BLEU_IMPLEMENTATIONS = ("nltk", "sacrebleu")


@register
class BleuScoreEvaluator(SacrebleuEvaluator):
    """Sentence BLEU.

    ``implementation="nltk"`` (the default, the compatible SDK's value): nltk's ``sentence_bleu``
    (uniform weights over 1-4-grams) with ``SmoothingFunction().method4``, on the SDK's tokens
    (``tokenizer="sdk"``, see :class:`SdkTokenizer`). As in nltk, a response with no unigram in common
    with the ground truth scores the integer ``0``. ``bleu_properties`` is ``None``, as in the SDK.

    ``implementation="sacrebleu"``: sacrebleu's sentence BLEU (``tokenize`` 13a by default,
    exponential smoothing, effective order) divided by 100; the row's sufficient statistics are kept in
    ``bleu_properties["sacrebleu_stats"]``.

    Either way the summary adds ``corpus_bleu``: sacrebleu's corpus BLEU (n-gram counts summed over
    rows, no effective order) divided by 100."""

    metric = "bleu_score"
    prefix = "bleu"
    score_key = "bleu"
    corpus_key = "corpus_bleu"
    description = "sentence BLEU (nltk, smoothing method 4, as the SDK; or sacrebleu) and corpus BLEU"

    def __init__(
        self,
        *,
        threshold: float = 0.5,
        implementation: str = "nltk",
        tokenizer: str = "sdk",
        tokenize: str = "13a",
        lowercase: bool = False,
    ) -> None:
        super().__init__(threshold=threshold)
        if implementation not in BLEU_IMPLEMENTATIONS:
            choices = ", ".join(BLEU_IMPLEMENTATIONS)
            raise ValueError(f"unknown implementation {implementation!r}; expected one of {choices}")
        self.implementation = implementation
        self.tokenizer = WordTokenizer(tokenizer)
        self.tokenize = tokenize
        self.lowercase = lowercase

    def options(self) -> dict[str, Any]:
        if self.implementation == "nltk":
            import nltk

            return {
                **super().options(),
                "implementation": "nltk",
                "smoothing": "method4",
                "tokenizer": self.tokenizer.name,
                **self.tokenizer.describe(),
                "nltk": nltk.__version__,
            }
        import sacrebleu

        return {
            **super().options(),
            "implementation": "sacrebleu",
            "tokenize": self.tokenize,
            "lowercase": self.lowercase,
            "smooth": "exp",
            "effective_order": True,
            "sacrebleu": sacrebleu.__version__,
        }

    def _make_metric(self) -> Any:
        from sacrebleu.metrics.bleu import BLEU

        return BLEU(tokenize=self.tokenize, lowercase=self.lowercase, effective_order=True)

    def value(self, response: str, truths: list[str]) -> float:
        if self.implementation == "sacrebleu":
            return super().value(response, truths)
        from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

        tok = self.tokenizer
        # int 0 when nothing matches, exactly as nltk (and so the SDK) returns it
        score: float = sentence_bleu(
            [tok(t) for t in truths], tok(response), smoothing_function=SmoothingFunction().method4
        )
        return score

    def outputs(self, response: str, truths: list[str]) -> Outcome:
        if self.implementation == "sacrebleu":
            return super().outputs(response, truths)
        return self.result(self.value(response, truths))

    def corpus_value(self, stats: list[list[int]]) -> float:
        from sacrebleu.metrics.bleu import BLEU

        total = sum_stats(stats)
        order = self._metric.max_ngram_order
        score = BLEU.compute_bleu(
            correct=total[2 : 2 + order],
            total=total[2 + order :],
            sys_len=int(total[0]),
            ref_len=int(total[1]),
            smooth_method="exp",
            effective_order=False,
            max_ngram_order=order,
        )
        return float(score.score) / 100.0
