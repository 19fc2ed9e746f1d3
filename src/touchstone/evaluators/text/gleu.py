"""Google-BLEU (nltk's ``sentence_gleu``) on word tokens."""

from __future__ import annotations

from touchstone.evaluators.registry import register
from touchstone.evaluators.text.base import WordEvaluator


@register
class GleuScoreEvaluator(WordEvaluator):
    """Google-BLEU (nltk ``sentence_gleu``, n-grams 1-4) on word tokens; several ground truths are
    nltk's multi-reference GLEU (the reference with the best match ratio)."""

    metric = "gleu_score"
    prefix = "gleu"
    score_key = "gleu"
    description = "Google-BLEU (nltk sentence_gleu)"

    def value(self, response: str, truths: list[str]) -> float:
        from nltk.translate.gleu_score import sentence_gleu

        tok = self.tokenizer
        return float(sentence_gleu([tok(t) for t in truths], tok(response)))
