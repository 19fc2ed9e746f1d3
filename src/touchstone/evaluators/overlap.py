"""Traditional n-gram overlap metrics: BLEU, chrF, GLEU, METEOR and ROUGE (SPEC 3.3).

Each metric is computed by the library that defines it, called below its convenience wrappers so
that per-row overhead stays small:

* ``bleu_score``: nltk's ``sentence_bleu`` with smoothing method 4 (the compatible SDK's value), or
  sacrebleu's sentence BLEU with ``implementation="sacrebleu"``; the corpus score is sacrebleu's.
* ``chrf_score`` (and BLEU's sacrebleu variant and corpus score): sacrebleu (``BLEU``/``CHRF``
  objects built once per evaluator; sentence scores from the segment statistics, the corpus score
  from the statistics summed over rows, exactly as ``sacrebleu.corpus_bleu``/``corpus_chrf``).
* ``gleu_score`` and ``meteor_score``: nltk (``sentence_gleu``, ``meteor_score``).
* ``rouge``: rouge-score's tokenizer and formulas. ROUGE-N counts n-grams as rouge-score does;
  ROUGE-L computes the longest common subsequence with a bit-parallel algorithm (its length is unique,
  so the value is identical to rouge-score's dynamic programme, but linear in memory and fast on
  100k-character texts); ROUGE-Lsum uses rouge-score's summary-level LCS.

Nothing here downloads data. BLEU (by default), GLEU and METEOR tokenise as the compatible SDK does
(``tokenizer="sdk"``, :class:`SdkTokenizer`): ``nltk.word_tokenize`` -- English Punkt sentences, then
nltk's Treebank word tokenizer -- for ASCII text, nltk's NIST ``international_tokenize`` for other
text. nltk's own data is used when nltk finds it (so the tokens are the SDK's in the same
environment); otherwise the English Punkt model shipped in ``punkt_english/`` (nltk's ``punkt_tab``
files) and Unicode classes from ``unicodedata`` (what can differ: characters whose Unicode category
differs between Python's Unicode version and the one nltk's ``perluniprops`` data was made from).
``tokenizer="nltk"`` is the Treebank tokenizer over the whole text with no sentence split
(``nltk.word_tokenize(text, preserve_line=True)``; for plain ASCII its rules run on Python's ``re``
engine: same tokens, 1.6x faster; see ``_treebank_tokenize``). METEOR matches exact words and Porter
stems, and WordNet synonyms only when the WordNet data is already installed (``use_wordnet=None``, the
default, detects it; it is never downloaded); without it the result is exactly nltk's ``meteor_score``
with an empty synonym dictionary, which is what the options record, and it can be below the SDK's
(which requires WordNet) where a synonym would have matched.

Edge cases (all defined, none raise): an empty or whitespace-only or punctuation-only response or
ground truth yields no tokens for the tokenizers that drop them, and the metric's own convention for
empty input applies: BLEU 0, chrF 0 (unless both sides are empty of characters, then 0 too), GLEU 0,
METEOR 0, ROUGE precision/recall/F1 0. Unicode text is kept (CJK text without spaces is one word for
the word-level tokenizers; ROUGE's tokenizer keeps only ``[a-z0-9]``, as rouge-score does, so
non-Latin text scores 0 there). Several ground truths: BLEU and chrF as sacrebleu's multi-reference
scores, GLEU as nltk's (best ratio), METEOR the maximum over references (as nltk), ROUGE the reference
with the best F1 (rouge-score's ``score_multi``).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from pathlib import Path
from typing import Any, ClassVar

from touchstone.data.kinds import as_text_list
from touchstone.evaluators.base import RESPONSE_AND_GROUND_TRUTHS, Evaluator, Outputs
from touchstone.evaluators.registry import register


# ------------------------------------------------------------------------------------------ shared
class _OverlapEvaluator(Evaluator):
    """Shared shape: inputs ``response`` + ``ground_truth`` (one or several), a 0-1 score, pass at 0.5."""

    inputs = RESPONSE_AND_GROUND_TRUTHS
    value_range = "0-1"
    default_threshold: ClassVar[float | None] = 0.5

    def value(self, response: str, truths: list[str]) -> float:
        """The metric for one response against its ground truths."""
        raise NotImplementedError

    def outputs(self, response: str, truths: list[str]) -> Outputs:
        """The full output dict for one response against its ground truths."""
        return self.result(self.value(response, truths))

    def _score(self, **inputs: Any) -> Outputs:
        return self.outputs(inputs["response"], as_text_list(inputs["ground_truth"]))

    def score_batch(self, rows: Sequence[Mapping[str, Any]]) -> list[Outputs]:
        out: list[Outputs] = []
        outputs = self.outputs
        for row in rows:
            try:
                gt = row["ground_truth"]
                out.append(outputs(row["response"], [gt] if isinstance(gt, str) else list(gt)))
            except Exception as exc:  # a failed score is data, recorded with its cause
                out.append(self.failure(exc))
        return out

    def __getstate__(self) -> dict[str, Any]:
        # Library objects and caches are rebuilt lazily after unpickling (process pools).
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_lazy")}


# --------------------------------------------------------------------------------- sacrebleu family
class _SacrebleuEvaluator(_OverlapEvaluator):
    """A sacrebleu metric. Each row's sufficient statistics (sacrebleu's segment statistics) give the
    sentence score and are kept in ``<m>_properties["sacrebleu_stats"]``, so the corpus score -- the
    statistics summed over rows -- is recomputed from stored scores without a second pass over the
    texts (``corpus_metrics``)."""

    corpus_key: ClassVar[str] = ""

    def _make_metric(self) -> Any:
        raise NotImplementedError

    @property
    def _metric(self) -> Any:
        metric = self.__dict__.get("_lazy_metric")
        if metric is None:
            metric = self.__dict__["_lazy_metric"] = self._make_metric()
        return metric

    def statistics(self, response: str, truths: list[str]) -> list[int]:
        """sacrebleu's sufficient statistics of one segment (against all its references)."""
        stats = self._metric._extract_corpus_statistics([response], [[t] for t in truths])[0]
        return [int(x) for x in stats]

    def sentence_value(self, stats: list[int]) -> float:
        # clamped: sacrebleu can return 100.00000000000004 for a perfect match
        return min(1.0, float(self._metric._compute_score_from_stats(list(stats)).score) / 100.0)

    def value(self, response: str, truths: list[str]) -> float:
        return self.sentence_value(self.statistics(response, truths))

    def outputs(self, response: str, truths: list[str]) -> Outputs:
        stats = self.statistics(response, truths)
        return self.result(self.sentence_value(stats), properties={"sacrebleu_stats": stats})

    def corpus_value(self, stats: list[list[int]]) -> float:
        raise NotImplementedError

    def corpus_metrics(
        self, inputs: Sequence[Mapping[str, Any]], outputs: Sequence[Outputs]
    ) -> dict[str, float]:
        # The statistics are summed as the rows go by (integers: the same sum as summing them at the
        # end), so a run's rows can be streamed through here without being held.
        total: list[int] | None = None
        for row, out in zip(inputs, outputs, strict=True):
            if self.error_key in out:
                continue
            props = out.get(f"{self.prefix}_properties")
            stats = props.get("sacrebleu_stats") if isinstance(props, Mapping) else None
            if stats is None:  # stored by another version, or built by hand: recompute
                stats = self.statistics(row["response"], as_text_list(row["ground_truth"]))
            total = list(stats) if total is None else [a + b for a, b in zip(total, stats, strict=True)]
        if total is None:
            return {}
        return {self.corpus_key: self.corpus_value([total])}


def _sum_stats(stats: list[list[int]]) -> list[int]:
    return [sum(column) for column in zip(*stats, strict=True)]


BLEU_IMPLEMENTATIONS = ("nltk", "sacrebleu")


@register
class BleuScoreEvaluator(_SacrebleuEvaluator):
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

    def outputs(self, response: str, truths: list[str]) -> Outputs:
        if self.implementation == "sacrebleu":
            return super().outputs(response, truths)
        return self.result(self.value(response, truths))

    def corpus_value(self, stats: list[list[int]]) -> float:
        from sacrebleu.metrics.bleu import BLEU

        total = _sum_stats(stats)
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


@register
class ChrfScoreEvaluator(_SacrebleuEvaluator):
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
        return float(self._metric._compute_score_from_stats(_sum_stats(stats)).score) / 100.0


# ------------------------------------------------------------------------------------- tokenizers
TOKENIZERS = ("sdk", "nltk", "13a", "whitespace")


class WordTokenizer:
    """Word tokenizer for BLEU, GLEU and METEOR; never downloads anything.

    ``sdk`` (the default): what the compatible SDK tokenises with -- ``nltk.word_tokenize`` (English
    Punkt sentences, then nltk's Treebank word tokenizer per sentence) for ASCII text, and nltk's NIST
    ``international_tokenize`` for any other text (see :class:`SdkTokenizer`). ``nltk``: the Treebank
    word tokenizer over the whole text, with no sentence split (``nltk.word_tokenize(text,
    preserve_line=True)``); ``13a``: sacrebleu's mteval-13a tokenizer, split on spaces;
    ``whitespace``: ``str.split()``."""

    def __init__(self, name: str = "sdk") -> None:
        if name not in TOKENIZERS:
            raise ValueError(f"unknown tokenizer {name!r}; expected one of {', '.join(TOKENIZERS)}")
        self.name = name
        self._impl: Any = None

    def __getstate__(self) -> dict[str, Any]:
        return {"name": self.name, "_impl": None}

    def __call__(self, text: str) -> list[str]:
        if self.name == "whitespace":
            return text.split()
        if self._impl is None:
            self._impl = self._make()
        if self.name == "13a":
            return str(self._impl(text.rstrip())).split()
        return list(self._impl(text))

    def _make(self) -> Callable[[str], Any]:
        if self.name == "sdk":
            return SdkTokenizer()
        if self.name == "nltk":
            treebank: Callable[[str], Any] = _treebank_tokenize()
            return treebank
        from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

        return Tokenizer13a()

    def describe(self) -> dict[str, str]:
        """Which data the tokenizer uses (recorded in the evaluator's options)."""
        if self.name != "sdk":
            return {}
        if self._impl is None:
            self._impl = self._make()
        impl: SdkTokenizer = self._impl
        return impl.describe()


_PUNKT_DIR = Path(__file__).with_name("punkt_english")


def _nltk_has(resource: str) -> bool:
    """Whether nltk finds a data resource on this machine (its own search path; never downloads)."""
    import nltk

    try:
        nltk.data.find(resource)
    except LookupError:
        return False
    return True


def _bundled_punkt_parameters() -> Any:
    """nltk's English Punkt model (the ``punkt_tab`` data's four files, shipped in
    ``punkt_english/``), read into ``PunktParameters`` the way nltk reads them."""
    from nltk.tokenize.punkt import PunktParameters

    def lines(name: str) -> list[str]:
        text = (_PUNKT_DIR / name).read_text(encoding="utf-8")
        return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")

    params = PunktParameters()
    params.abbrev_types = set(lines("abbrev_types.txt"))
    params.sent_starters = set(lines("sent_starters.txt"))
    params.collocations = {tuple(line.split("\t")) for line in lines("collocations.tab")}
    for line in lines("ortho_context.tab"):
        word, flags = line.split("\t")
        params.ortho_context[word] = int(flags)
    return params


class SdkTokenizer:
    """The compatible SDK's tokenizer (``nltk_tokenize`` in azure-ai-evaluation), without downloads.

    * ASCII text: ``nltk.word_tokenize(text)``: nltk's Punkt sentence splitter with the English model,
      then nltk's Treebank word tokenizer on each sentence. The model is nltk's own ``punkt_tab``
      data when nltk finds it on this machine (so touchstone tokenises exactly as the SDK beside it
      does, whatever data that is); otherwise the copy of the same English model shipped with
      touchstone (``punkt_english/``, taken from nltk's ``punkt_tab`` package).
    * Other text: nltk's ``NISTTokenizer().international_tokenize(text)``. Its character classes
      (Unicode numbers, punctuation, symbols) come from nltk's ``perluniprops`` data when nltk finds
      it; otherwise from Python's ``unicodedata`` (general categories N*, P*, S*). The two lists come
      from different Unicode versions, so a character assigned or re-categorised between them can
      tokenise differently; letters, digits and common punctuation do not.
    """

    def __init__(self) -> None:
        self._word = _treebank_tokenize()
        if _nltk_has("tokenizers/punkt_tab/english/"):
            from nltk.tokenize.punkt import PunktTokenizer

            self._sentences: Any = PunktTokenizer("english")
            self.punkt_source = "nltk data"
        else:
            from nltk.tokenize.punkt import PunktSentenceTokenizer

            self._sentences = PunktSentenceTokenizer(_bundled_punkt_parameters())
            self.punkt_source = "bundled"
        self._international: Callable[[str], list[str]] | None = None
        self.perluniprops_source = ""

    def __getstate__(self) -> dict[str, Any]:
        raise TypeError("SdkTokenizer is rebuilt after unpickling, not pickled")

    def describe(self) -> dict[str, str]:
        """Where the Punkt model and (once used) the Unicode classes came from."""
        out = {"punkt": self.punkt_source}
        if self.perluniprops_source:
            out["perluniprops"] = self.perluniprops_source
        return out

    def __call__(self, text: str) -> list[str]:
        if not text.isascii():
            if self._international is None:
                self._international = self._make_international()
            return self._international(text)
        word = self._word
        return [token for sentence in self._sentences.tokenize(text) for token in word(sentence)]

    def _make_international(self) -> Callable[[str], list[str]]:
        if _nltk_has("misc/perluniprops"):
            try:
                from nltk.tokenize.nist import NISTTokenizer

                self.perluniprops_source = "nltk data"
                return NISTTokenizer().international_tokenize  # type: ignore[no-any-return]
            except LookupError:  # the data is there but unreadable: fall back as if absent
                pass
        self.perluniprops_source = "unicodedata"
        return _international_tokenize


def _category_class(prefix: str) -> str:
    """A regex character class body with every character whose Unicode category starts with
    ``prefix`` (whitespace excluded, as the perluniprops lists are stripped)."""
    import unicodedata

    chars = (chr(i) for i in range(0x110000))
    members = "".join(c for c in chars if unicodedata.category(c).startswith(prefix) and not c.isspace())
    return re.sub(r"[]^\\-]", r"\\\g<0>", members)


_NIST_RULES: list[tuple[re.Pattern[str], str]] = []


def _international_tokenize(text: str) -> list[str]:
    """nltk's ``NISTTokenizer.international_tokenize`` (no lowercasing), its Unicode classes taken
    from ``unicodedata`` instead of nltk's perluniprops data."""
    from nltk.tokenize.util import xml_unescape

    if not _NIST_RULES:
        number, punct, symbol = _category_class("N"), _category_class("P"), _category_class("S")
        _NIST_RULES.extend([
            (re.compile("([\x00-\x7f]+)"), r" \1 "),
            (re.compile(f"([{number}])([{punct}])"), "\\1 \\2 "),
            (re.compile(f"([{punct}])([{number}])"), " \\1 \\2"),
            (re.compile(f"([{symbol}])"), " \\1 "),
        ])
    text = text.replace("<skipped>", "").replace("\u2028", " ")
    text = xml_unescape(text)
    for pattern, replacement in _NIST_RULES:
        text = pattern.sub(replacement, text)
    return " ".join(text.strip().split()).split()


# Characters on which Python's ``re`` and the ``regex`` engine nltk uses agree for every Treebank
# rule: ASCII without the control characters that ``str.isspace`` counts as whitespace but Unicode's
# White_Space property does not (\x1c-\x1f), and without other controls.
_ODD_ASCII = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def _treebank_tokenize() -> Any:
    """nltk's Treebank word tokenizer (``NLTKWordTokenizer().tokenize``), run faster where that is
    provably the same.

    nltk compiles its tokenizer rules with the ``regex`` engine behind a ReDoS timeout wrapper, which
    costs about 40% of the tokenizer's time. For plain ASCII text (:data:`_ODD_ASCII` excluded) the
    same rules -- nltk's own pattern strings and replacements, applied by nltk's own ``tokenize``
    method -- are run on Python's ``re`` engine, where both engines match identically; any other text
    goes through nltk's tokenizer unchanged. ``tests/evaluators/test_overlap_tokenizer.py`` checks the
    two paths equal on thousands of random and adversarial texts. Where the rules do not compile with
    ``re`` (possessive quantifiers need Python 3.11) nltk's tokenizer is used for everything."""
    from nltk.tokenize import NLTKWordTokenizer

    reference: Callable[[str], list[str]] = NLTKWordTokenizer().tokenize
    fast: Callable[[str], list[str]] | None = _stdlib_treebank(NLTKWordTokenizer)
    if fast is None:
        return reference
    odd = _ODD_ASCII.search

    def tokenize(text: str) -> list[str]:
        if text.isascii() and odd(text) is None:
            return fast(text)
        return reference(text)

    return tokenize


_PORTABLE_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII  # same bits in ``regex``


def _stdlib_treebank(base: type) -> Any:
    """``base().tokenize`` with every rule pattern recompiled by ``re`` (None if one does not compile)."""

    def convert(value: Any) -> Any:
        if hasattr(value, "pattern") and hasattr(value, "sub"):
            return re.compile(value.pattern, int(value.flags) & _PORTABLE_FLAGS)
        if isinstance(value, tuple) and value and hasattr(value[0], "pattern"):
            return (convert(value[0]), *value[1:])
        if isinstance(value, list) and value and all(
            hasattr(v, "pattern") or (isinstance(v, tuple) and v and hasattr(v[0], "pattern")) for v in value
        ):
            return [convert(v) for v in value]
        return value

    try:
        rules = {name: convert(getattr(base, name)) for name in dir(base) if name.isupper()}
    except (re.error, TypeError):
        return None
    return type(f"Stdlib{base.__name__}", (base,), rules)().tokenize


class _WordEvaluator(_OverlapEvaluator):
    def __init__(self, *, threshold: float = 0.5, tokenizer: str = "sdk") -> None:
        super().__init__(threshold=threshold)
        self.tokenizer = WordTokenizer(tokenizer)

    def options(self) -> dict[str, Any]:
        import nltk

        return {
            **super().options(),
            "tokenizer": self.tokenizer.name,
            **self.tokenizer.describe(),
            "nltk": nltk.__version__,
        }


@register
class GleuScoreEvaluator(_WordEvaluator):
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
class MeteorScoreEvaluator(_WordEvaluator):
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


# ------------------------------------------------------------------------------------------ ROUGE
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
class RougeScoreEvaluator(_OverlapEvaluator):
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

    def outputs(self, response: str, truths: list[str]) -> Outputs:
        return self._outputs(*self.best(response, truths))

    def _outputs(self, precision: float, recall: float, f1: float) -> Outputs:
        flat: dict[str, Any] = {"rouge_precision": precision, "rouge_recall": recall, "rouge_f1_score": f1}
        for name, value in (("precision", precision), ("recall", recall), ("f1_score", f1)):
            passed = value >= self.thresholds[name]
            flat[f"rouge_{name}_result"] = "pass" if passed else "fail"
            flat[f"rouge_{name}_passed"] = passed
            flat[f"rouge_{name}_threshold"] = self.thresholds[name]
        return self.result(f1, properties=dict(flat), **flat)
