"""Word tokenizers for BLEU, GLEU and METEOR; none downloads anything.

``sdk`` (:class:`SdkTokenizer`) tokenises as the compatible SDK does: ``nltk.word_tokenize`` --
English Punkt sentences, then nltk's Treebank word tokenizer -- for ASCII text, nltk's NIST
``international_tokenize`` for other text. nltk's own data is used when nltk finds it; otherwise the
English Punkt model shipped in ``evaluators/punkt_english/`` (nltk's ``punkt_tab`` files) and Unicode
classes from ``unicodedata``. ``nltk`` is the Treebank tokenizer over the whole text with no sentence
split; for plain ASCII its rules run on Python's ``re`` engine (same tokens, faster; see
:func:`treebank_tokenize`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
            treebank: Callable[[str], Any] = treebank_tokenize()
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


PUNKT_DIR = Path(__file__).parent.parent / "punkt_english"


def _nltk_has(resource: str) -> bool:
    """Whether nltk finds a data resource on this machine (its own search path; never downloads)."""
    import nltk

    try:
        nltk.data.find(resource)
    except LookupError:
        return False
    return True


def bundled_punkt_parameters() -> Any:
    """nltk's English Punkt model (the ``punkt_tab`` data's four files, shipped in
    ``punkt_english/``), read into ``PunktParameters`` the way nltk reads them."""
    from nltk.tokenize.punkt import PunktParameters

    def lines(name: str) -> list[str]:
        text = (PUNKT_DIR / name).read_text(encoding="utf-8")
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
        self._word = treebank_tokenize()
        if _nltk_has("tokenizers/punkt_tab/english/"):
            from nltk.tokenize.punkt import PunktTokenizer

            self._sentences: Any = PunktTokenizer("english")
            self.punkt_source = "nltk data"
        else:
            from nltk.tokenize.punkt import PunktSentenceTokenizer

            self._sentences = PunktSentenceTokenizer(bundled_punkt_parameters())
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


def treebank_tokenize() -> Any:
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
    fast: Callable[[str], list[str]] | None = stdlib_treebank(NLTKWordTokenizer)
    if fast is None:
        return reference
    odd = _ODD_ASCII.search

    def tokenize(text: str) -> list[str]:
        if text.isascii() and odd(text) is None:
            return fast(text)
        return reference(text)

    return tokenize


_PORTABLE_FLAGS = re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII  # same bits in ``regex``


def stdlib_treebank(base: type) -> Any:
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
