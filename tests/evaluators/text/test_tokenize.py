"""The Treebank word tokenizer used by GLEU and METEOR equals nltk's on every text.

``WordTokenizer("nltk")`` runs nltk's own rules on Python's ``re`` engine for plain ASCII text and
hands everything else to nltk's tokenizer (see ``touchstone.evaluators.text.tokenize.treebank_tokenize``).
The reference here is nltk itself, called directly: ``NLTKWordTokenizer().tokenize`` and
``nltk.word_tokenize(text, preserve_line=True)``. The texts are built to hit every rule: quotes of
every kind, contractions, brackets, dashes, final periods, ellipses, colons before digits, currency,
control characters, non-ASCII letters, and very long inputs."""

from __future__ import annotations

import random
import sys
from typing import Any

import pytest
from nltk.tokenize import NLTKWordTokenizer, word_tokenize

from touchstone.evaluators.text.tokenize import WordTokenizer, stdlib_treebank, treebank_tokenize

# Pieces chosen to trigger each of the tokenizer's rules (and their boundaries).
PIECES = [
    "word", "Word", "WORD", "a", "I", "x1", "3.14", "1,000", "12:30", "U.S.", "e.g.", "etc.", "Mr.",
    "can't", "cannot", "CANNOT", "gonna", "gimme", "wanna ", "lemme", "'tis", "'Twas", "d'ye",
    "more'n", "whaddya", "whatcha", "don't", "DON'T", "it's", "I'm", "we'll", "they're", "you've",
    "she'd", "o'clock", "rock'n'roll", "'quoted'", "\"quoted\"", "``quoted''", "''", "``", "`", "'",
    "\"", "(", ")", "[", "]", "{", "}", "<", ">", "-", "--", "---", "...", "..", ".", ",", ":", ";",
    "!", "?", "?!", "@", "#", "$", "%", "&", "*", "/", "\\", "|", "~", "^", "+", "=", "_", "$3.88",
    "50%", "a@b.com", "http://x.org/a?b=c", "(paren)", "[bracket]", "{brace}", "<angle>", "'s", "'S",
    "n't", "N'T", "'ll", "'LL", "'re", "'ve", "'d", "'m", "s'", "dogs'", ":)", ";-)", "a.b.c",
    "end.\"", "end.'", "end.)", "end.]", "end.>", "end.}",
]
WHITESPACE = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f"]
NON_ASCII = [
    "café",
    "naïve",
    "Zürich",
    "東京",
    "日本語のテキストです。",
    "«guillemets»",
    "“curly”",
    "‘single’",
    "„low“",
    "en–dash",
    "em—dash",
    "‒",
    "―",
    "\u00a0",
    "\u2009",
    "\u3000",
    "\u0085",
    "😀",
    "ſ",
    "K",
    "İ",
    "ß",
    "x\u0301",
]
CONTROLS = ["\x00", "\x07", "\x08", "\x7f", "\x1b"]


def _text(rng: random.Random, *, ascii_only: bool) -> str:
    n = rng.randint(0, 30)
    parts: list[str] = []
    for _ in range(n):
        r = rng.random()
        if r < 0.7:
            parts.append(rng.choice(PIECES))
        elif r < 0.8 and not ascii_only:
            parts.append(rng.choice(NON_ASCII))
        elif r < 0.83:
            parts.append(rng.choice(CONTROLS))
        else:
            parts.append("".join(rng.choice("'\".,:;!?()[]`-") for _ in range(rng.randint(1, 4))))
        if rng.random() < 0.8:
            parts.append(rng.choice(WHITESPACE))
    text = "".join(parts)
    if rng.random() < 0.3:
        text = text.strip()
    return text


def _corpus(seed: int, n: int, *, ascii_only: bool) -> list[str]:
    rng = random.Random(seed)
    return [_text(rng, ascii_only=ascii_only) for _ in range(n)]


@pytest.mark.parametrize(("seed", "ascii_only"), [(1, True), (2, True), (3, False), (4, False)])
def test_equals_nltk_on_random_adversarial_texts(seed: int, ascii_only: bool) -> None:
    ours = WordTokenizer("nltk")
    nltk_tokenize = NLTKWordTokenizer().tokenize
    texts = _corpus(seed, 3000, ascii_only=ascii_only)
    for text in texts:
        expected = nltk_tokenize(text)
        assert ours(text) == expected, repr(text)
        assert expected == word_tokenize(text, preserve_line=True)


def test_every_piece_alone_and_in_context() -> None:
    ours = WordTokenizer("nltk")
    nltk_tokenize = NLTKWordTokenizer().tokenize
    for a in PIECES + NON_ASCII + CONTROLS + WHITESPACE:
        for text in (a, f" {a} ", f"x{a}y", f"{a}.", f"({a})", f"\"{a}\"", f"'{a}' ", f"{a} {a}"):
            assert ours(text) == nltk_tokenize(text), repr(text)


@pytest.mark.parametrize(
    "text",
    [
        "a." * 50_000,
        ". " * 50_000,
        "\"'" * 50_000,
        "word " * 20_000,
        "x." + " " * 100_000 + "y",
        "can't " * 16_000,
        "(" * 100_000,
    ],
)
def test_very_long_texts(text: str) -> None:
    assert WordTokenizer("nltk")(text) == NLTKWordTokenizer().tokenize(text)


@pytest.mark.skipif(sys.version_info < (3, 11), reason="nltk's rules need possessive quantifiers (re, 3.11+)")
def test_the_fast_path_is_really_taken_for_ascii() -> None:
    fast = stdlib_treebank(NLTKWordTokenizer)
    assert fast is not None
    # every rule of the fast tokenizer is a stdlib ``re`` pattern, none is nltk's wrapped ``regex`` one
    rules = type(fast.__self__)
    seen = 0
    for name in dir(NLTKWordTokenizer):
        if not name.isupper():
            continue
        value = getattr(rules, name)
        items = value if isinstance(value, list) else [value]
        for item in items:
            pattern = item[0] if isinstance(item, tuple) else item
            if hasattr(pattern, "sub"):
                assert type(pattern).__module__ == "re", name
                seen += 1
    assert seen >= 20
    tokenize = treebank_tokenize()
    assert tokenize is not NLTKWordTokenizer().tokenize
    assert tokenize("Hello, world. It's 12:30!") == ["Hello", ",", "world.", "It", "'s", "12:30", "!"]


# ------------------------------------------------------------------- the SDK's tokenizer (issue 11)
def test_bundled_punkt_model_reads_as_nltk_reads_it(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    import nltk
    from nltk.tokenize.punkt import PunktTokenizer

    from touchstone.evaluators.text.tokenize import PUNKT_DIR, bundled_punkt_parameters

    # the same files installed as nltk data, read by nltk itself
    shutil.copytree(PUNKT_DIR, tmp_path / "tokenizers" / "punkt_tab" / "english")
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path)])
    nltks = PunktTokenizer("english")._params
    ours = bundled_punkt_parameters()
    assert ours.abbrev_types == nltks.abbrev_types and "mr" in ours.abbrev_types
    assert ours.collocations == nltks.collocations
    assert ours.sent_starters == nltks.sent_starters
    assert dict(ours.ortho_context) == dict(nltks.ortho_context) and len(ours.ortho_context) > 10_000


def test_sdk_tokenizer_splits_sentences_as_word_tokenize() -> None:
    from touchstone.evaluators.text.tokenize import SdkTokenizer

    tok = SdkTokenizer()
    # an abbreviation keeps its period; a sentence end splits it off
    assert tok("Mr. Smith went to Washington. He left at 5 p.m. today.") == [
        "Mr.", "Smith", "went", "to", "Washington", ".", "He", "left", "at", "5", "p.m.", "today", ".",
    ]
    assert tok("") == []
    # non-ASCII text goes through the NIST international rules: ASCII runs are set apart
    assert tok("Héllo wörld, 3.5€ ☃") == ["H", "é", "llo", "w", "ö", "rld,", "3", ".", "5", "€", "☃"]


def test_bleu_is_nltk_method4_with_int_zero() -> None:
    from touchstone import BleuScoreEvaluator

    pair = {"response": "Tokyo is the capital of Japan.", "ground_truth": "The capital of Japan is Tokyo."}
    out = BleuScoreEvaluator()(**pair)
    assert out["bleu"] == pytest.approx(0.22961813530951883, abs=1e-12) and out["bleu_properties"] is None
    zero = BleuScoreEvaluator()(response="Hello", ground_truth="Goodbye")["bleu"]
    assert zero == 0 and type(zero) is int
    sacre = BleuScoreEvaluator(implementation="sacrebleu")(response="a b c d", ground_truth="a b c d")
    assert sacre["bleu"] == pytest.approx(1.0) and "sacrebleu_stats" in sacre["bleu_properties"]
    with pytest.raises(ValueError):
        BleuScoreEvaluator(implementation="other")
