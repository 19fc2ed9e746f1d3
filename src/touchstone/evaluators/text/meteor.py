"""METEOR as nltk computes it: exact and Porter-stem matches, and WordNet synonyms only where the
WordNet data is already installed (it is never downloaded)."""

from __future__ import annotations

from typing import Any

from touchstone.evaluators.registry import register
from touchstone.evaluators.text.base import WordEvaluator


class _NoSynonyms:
    """Stands in for nltk's WordNet reader when its data is not installed: no synonyms at all, so
    METEOR matches exact words and stems only."""

    def synsets(self, word: str) -> list[Any]:
        return []


def wordnet_installed() -> bool:
    """Whether nltk's WordNet data is already on this machine (never downloads it)."""
    import nltk

    for resource in ("corpora/wordnet", "corpora/wordnet.zip"):
        try:
            nltk.data.find(resource)
            return True
        except LookupError:
            continue
    return False


class _CachedStemmer:
    """nltk's Porter stemmer with a memo: same stems, each word stemmed once."""

    def __init__(self) -> None:
        self._cache: dict[str, str] = {}
        self._stemmer: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"_cache": {}, "_stemmer": None}

    def stem(self, word: str) -> str:
        stem = self._cache.get(word)
        if stem is None:
            if self._stemmer is None:
                from nltk.stem.porter import PorterStemmer

                self._stemmer = PorterStemmer()
            stem = self._stemmer.stem(word)
            if len(self._cache) < 200_000:
                self._cache[word] = stem
        return stem


@register
class MeteorScoreEvaluator(WordEvaluator):
    """METEOR as nltk's ``meteor_score`` computes it (alpha 0.9, beta 3, gamma 0.5 by default): exact,
    Porter-stem and -- only where WordNet data is already installed -- synonym matches; maximum over
    several ground truths. Never downloads WordNet."""

    metric = "meteor_score"
    prefix = "meteor"
    score_key = "meteor"
    description = "METEOR (nltk; exact + stem matches, WordNet synonyms only if installed)"

    def __init__(
        self,
        alpha: float = 0.9,
        beta: float = 3.0,
        gamma: float = 0.5,
        *,
        threshold: float = 0.5,
        tokenizer: str = "sdk",
        use_wordnet: bool | None = None,
    ) -> None:
        super().__init__(threshold=threshold, tokenizer=tokenizer)
        self.alpha = float(alpha)
        self.beta = float(beta)
        self.gamma = float(gamma)
        if use_wordnet is None:
            use_wordnet = wordnet_installed()
        elif use_wordnet and not wordnet_installed():
            raise ValueError("use_wordnet=True, but nltk's WordNet data is not installed (never downloaded)")
        self.use_wordnet = use_wordnet
        self._stemmer = _CachedStemmer()

    def options(self) -> dict[str, Any]:
        return {
            **super().options(),
            "alpha": self.alpha,
            "beta": self.beta,
            "gamma": self.gamma,
            "wordnet": self.use_wordnet,
        }

    def _wordnet(self) -> Any:
        if self.use_wordnet:
            from nltk.corpus import wordnet

            return wordnet
        return _NoSynonyms()

    def value(self, response: str, truths: list[str]) -> float:
        from nltk.translate.meteor_score import meteor_score

        tok = self.tokenizer
        return float(
            meteor_score(
                [tok(t) for t in truths],
                tok(response),
                stemmer=self._stemmer,
                wordnet=self._wordnet(),
                alpha=self.alpha,
                beta=self.beta,
                gamma=self.gamma,
            )
        )
