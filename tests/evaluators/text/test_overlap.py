"""BLEU, chrF, GLEU, METEOR and ROUGE against their references, on >= 1,000 generated cases each.

The references are independent of the evaluators' own call paths: BLEU against a written-out
definition and sacrebleu's public ``sentence_bleu``/``corpus_bleu``; chrF against sacrebleu's public
``sentence_chrf``/``corpus_chrf``; ROUGE-N/L against rouge-score's ``RougeScorer.score_multi`` (the
evaluator counts n-grams and the LCS itself); ROUGE-Lsum, GLEU and METEOR against definitions written
out here (the evaluator calls rouge-score / nltk for those)."""

from __future__ import annotations

import itertools
import math
import pickle
import random
import time
from collections import Counter
from typing import Any

import pytest

from touchstone.evaluators import registry
from touchstone.evaluators.text import (
    BleuScoreEvaluator,
    ChrfScoreEvaluator,
    GleuScoreEvaluator,
    MeteorScoreEvaluator,
    RougeScoreEvaluator,
    RougeType,
    WordTokenizer,
)
from touchstone.evaluators.text.rouge import lcs_length
from touchstone.scores import Outcome

TOL = 1e-9
N = 1100

WORDS = [
    "the",
    "a",
    "an",
    "cat",
    "cats",
    "dog",
    "dogs",
    "sat",
    "sits",
    "sitting",
    "on",
    "mat",
    "mats",
    "quick",
    "brown",
    "fox",
    "jumps",
    "jumped",
    "over",
    "lazy",
    "river",
    "bank",
    "banks",
    "money",
    "run",
    "running",
    "ran",
    "house",
    "garden",
    "tree",
    "trees",
    "42",
    "3.14",
    "U.S.",
    "don't",
    "it's",
    "naïve",
    "café",
    "Zürich",
    "résumé",
    "東京",
    "日本語",
    "中文",
    "한국어",
    "😀",
    "—",
    "“quoted”",
    "'single'",
    "(paren)",
    "[br]",
    "{x}",
    "e-mail",
]
PUNCT = list(".,!?;:-\"'()[]…")
ADVERSARIAL = [
    "",
    " ",
    "   \t\n ",
    "...",
    "!!! ???",
    ".",
    "a",
    "A",
    "the",
    "日本語のテキストです。",
    "我喜欢猫和狗",
    "naïve café — déjà vu",
    "😀😀😀",
    "Hello world. How are you? Fine!",
    "line one\nline two\n\nline three",
    "a a a a a a a a",
    "The THE the tHe",
]


def _sentence(rng: random.Random) -> str:
    r = rng.random()
    if r < 0.12:
        return rng.choice(ADVERSARIAL)
    n = rng.randint(1, 40)
    parts = []
    for _ in range(n):
        w = rng.choice(WORDS)
        if rng.random() < 0.15:
            w += rng.choice(PUNCT)
        if rng.random() < 0.1:
            w = w.capitalize()
        parts.append(w)
        if rng.random() < 0.05:
            parts.append("\n")
    return " ".join(parts)


def _cases(seed: int, n: int = N) -> list[tuple[str, list[str]]]:
    """(response, ground truths): random text, adversarial strings, shared vocabulary so there is
    overlap, near copies, and 1-3 ground truths per row."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        hyp = _sentence(rng)
        refs = [_sentence(rng) for _ in range(rng.choice([1, 1, 1, 2, 3]))]
        if i % 7 == 0 and hyp:
            words = hyp.split()
            rng.shuffle(words)
            refs[0] = " ".join(words[: max(1, len(words) - 2)])  # near copy
        if i % 50 == 0:
            refs[0] = hyp  # identical
        out.append((hyp, refs))
    return out


@pytest.fixture(scope="module")
def cases() -> list[tuple[str, list[str]]]:
    return _cases(7)


def _rows(cases: list[tuple[str, list[str]]]) -> list[dict[str, Any]]:
    return [{"response": h, "ground_truth": refs[0] if len(refs) == 1 else refs} for h, refs in cases]


# ------------------------------------------------------------------------------------------ BLEU
def _bleu_definition(hyp: str, refs: list[str]) -> float:
    """Sentence BLEU written out: 13a tokens, clipped n-gram counts (max over references), closest
    reference length (shorter on ties), brevity penalty, exponential smoothing, effective order."""
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

    tok = Tokenizer13a()
    h = tok(hyp.rstrip()).split()
    rs = [tok(r.rstrip()).split() for r in refs]

    def grams(ts: list[str], n: int) -> Counter[tuple[str, ...]]:
        return Counter(tuple(ts[i : i + n]) for i in range(len(ts) - n + 1))

    correct, total = [], []
    for n in range(1, 5):
        hc = grams(h, n)
        maxref: Counter[tuple[str, ...]] = Counter()
        for r in rs:
            for g, c in grams(r, n).items():
                maxref[g] = max(maxref[g], c)
        correct.append(sum(min(c, maxref[g]) for g, c in hc.items()))
        total.append(max(len(h) - n + 1, 0))
    ref_len = min((abs(len(r) - len(h)), len(r)) for r in rs)[1]
    if not any(correct):
        return 0.0
    bp = 1.0 if len(h) >= ref_len else (math.exp(1 - ref_len / len(h)) if h else 0.0)
    logs, smooth = [], 1.0
    for c, t in zip(correct, total, strict=True):
        if t == 0:
            break
        if c == 0:
            smooth *= 2
            logs.append(math.log(100.0 / (smooth * t)))
        else:
            logs.append(math.log(100.0 * c / t))
    return bp * math.exp(sum(logs) / len(logs)) / 100.0


def test_bleu_against_definition_and_sacrebleu(cases: list[tuple[str, list[str]]]) -> None:
    import sacrebleu

    ev = BleuScoreEvaluator(implementation="sacrebleu")
    outs = ev.score_batch(_rows(cases))
    for (hyp, refs), out in zip(cases, outs, strict=True):
        assert out["bleu"] == pytest.approx(_bleu_definition(hyp, refs), abs=TOL), (hyp, refs)
        assert out["bleu"] == pytest.approx(sacrebleu.sentence_bleu(hyp, refs).score / 100, abs=TOL)
        assert out["bleu_score"] == out["bleu"]
    # corpus BLEU: statistics summed over rows (variable numbers of references padded with None)
    width = max(len(r) for _, r in cases)
    streams = [[refs[j] if j < len(refs) else None for _, refs in cases] for j in range(width)]
    expected = sacrebleu.corpus_bleu([h for h, _ in cases], streams).score / 100  # type: ignore[arg-type]
    assert ev.corpus_metrics(_rows(cases), outs)["corpus_bleu"] == pytest.approx(expected, abs=TOL)
    # the same without stored statistics (recomputed from the inputs)
    bare = [Outcome(o.scores, {k: v for k, v in o.items() if k != "bleu_properties"}) for o in outs]
    assert ev.corpus_metrics(_rows(cases), bare)["corpus_bleu"] == pytest.approx(expected, abs=TOL)


def test_chrf_and_chrf_plus_plus_against_sacrebleu(cases: list[tuple[str, list[str]]]) -> None:
    import sacrebleu

    width = max(len(r) for _, r in cases)
    streams = [[refs[j] if j < len(refs) else None for _, refs in cases] for j in range(width)]
    for word_order in (0, 2):
        ev = ChrfScoreEvaluator(word_order=word_order)
        outs = ev.score_batch(_rows(cases))
        for (hyp, refs), out in zip(cases, outs, strict=True):
            ref = sacrebleu.sentence_chrf(hyp, refs, word_order=word_order).score / 100
            assert out["chrf"] == pytest.approx(ref, abs=TOL), (hyp, refs)
        expected = sacrebleu.corpus_chrf([h for h, _ in cases], streams, word_order=word_order).score / 100  # type: ignore[arg-type]
        assert ev.corpus_metrics(_rows(cases), outs)["corpus_chrf"] == pytest.approx(expected, abs=TOL)


# ----------------------------------------------------------------------------------------- ROUGE
def _union_lcs_hits(ref_sents: list[list[str]], can_sents: list[list[str]]) -> tuple[float, float, float]:
    """Summary-level ROUGE-L (ROUGE-Lsum) written out: for each reference sentence, the union of its
    LCS positions with every candidate sentence (LCS found by the usual table and backtrack), hits
    clipped by token counts on both sides."""
    if not ref_sents or not can_sents:
        return 0.0, 0.0, 0.0
    m, n = sum(map(len, ref_sents)), sum(map(len, can_sents))
    if not m or not n:
        return 0.0, 0.0, 0.0

    def lcs_positions(r: list[str], c: list[str]) -> list[int]:
        t = [[0] * (len(c) + 1) for _ in range(len(r) + 1)]
        for i in range(1, len(r) + 1):
            for j in range(1, len(c) + 1):
                t[i][j] = t[i - 1][j - 1] + 1 if r[i - 1] == c[j - 1] else max(t[i - 1][j], t[i][j - 1])
        i, j, pos = len(r), len(c), []
        while i > 0 and j > 0:
            if r[i - 1] == c[j - 1]:
                pos.append(i - 1)
                i, j = i - 1, j - 1
            elif t[i][j - 1] > t[i - 1][j]:
                j -= 1
            else:
                i -= 1
        return pos

    cnt_r = Counter(t for s in ref_sents for t in s)
    cnt_c = Counter(t for s in can_sents for t in s)
    hits = 0
    for r in ref_sents:
        union = sorted(set().union(*(lcs_positions(r, c) for c in can_sents)))
        for tok in (r[i] for i in union):
            if cnt_c[tok] > 0 and cnt_r[tok] > 0:
                hits += 1
                cnt_c[tok] -= 1
                cnt_r[tok] -= 1
    p, rec = hits / n, hits / m
    return p, rec, (2 * p * rec / (p + rec) if p + rec > 0 else 0.0)


@pytest.mark.parametrize("rouge_type", ["rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rougeL"])
@pytest.mark.parametrize("stem", [False, True])
def test_rouge_against_rouge_score(cases: list[tuple[str, list[str]]], rouge_type: str, stem: bool) -> None:
    from rouge_score.rouge_scorer import RougeScorer

    scorer = RougeScorer([rouge_type], use_stemmer=stem)
    ev = RougeScoreEvaluator(rouge_type, use_stemmer=stem)
    subset = cases if rouge_type in ("rouge1", "rougeL") or not stem else cases[:300]
    outs = ev.score_batch(_rows(subset))
    for (hyp, refs), out in zip(subset, outs, strict=True):
        ref = scorer.score_multi(refs, hyp)[rouge_type]
        assert out["rouge_precision"] == pytest.approx(ref.precision, abs=TOL), (hyp, refs)
        assert out["rouge_recall"] == pytest.approx(ref.recall, abs=TOL)
        assert out["rouge_f1_score"] == pytest.approx(ref.fmeasure, abs=TOL)
        assert out["rouge"] == out["rouge_score"] == out["rouge_f1_score"]


def test_rouge_lsum_against_definition(cases: list[tuple[str, list[str]]]) -> None:
    from rouge_score.tokenizers import DefaultTokenizer

    tok = DefaultTokenizer(False).tokenize
    ev = RougeScoreEvaluator(RougeType.ROUGE_L_SUM)
    outs = ev.score_batch(_rows(cases))
    for (hyp, refs), out in zip(cases, outs, strict=True):
        best = None
        for r in refs:
            s = _union_lcs_hits([tok(x) for x in r.split("\n") if x], [tok(x) for x in hyp.split("\n") if x])
            if best is None or s[2] > best[2]:
                best = s
        assert best is not None
        assert (out["rouge_precision"], out["rouge_recall"], out["rouge_f1_score"]) == pytest.approx(
            best, abs=TOL
        )


def test_lcs_length_equals_dynamic_programme() -> None:
    from rouge_score.rouge_scorer import _lcs_table

    rng = random.Random(3)
    for _ in range(1500):
        a = [rng.choice("abcdef") for _ in range(rng.randint(0, 40))]
        b = [rng.choice("abcdef") for _ in range(rng.randint(0, 40))]
        expected = _lcs_table(a, b)[-1][-1] if a and b else 0
        assert lcs_length(a, b) == expected


# ------------------------------------------------------------------------------------------ GLEU
def _gleu_definition(hyp: list[str], refs: list[list[str]]) -> float:
    """Sentence GLEU written out (Wu et al. 2016, nltk's multi-reference form): n-grams of orders
    1-4; for each reference, matches / max(hyp n-grams, ref n-grams); the reference with the best
    ratio wins (the first on ties); no n-grams anywhere gives 0."""

    def grams(ts: list[str]) -> Counter[tuple[str, ...]]:
        return Counter(tuple(ts[i : i + n]) for n in range(1, 5) for i in range(len(ts) - n + 1))

    hc = grams(hyp)
    best: tuple[int, int] | None = None
    for r in refs:
        rc = grams(r)
        n_all = max(sum(hc.values()), sum(rc.values()))
        if n_all == 0:
            continue
        tp = sum((hc & rc).values())
        if best is None or tp / n_all > best[0] / best[1]:
            best = (tp, n_all)
    return best[0] / best[1] if best else 0.0


def test_gleu_against_definition(cases: list[tuple[str, list[str]]]) -> None:
    tok = WordTokenizer("nltk")
    ev = GleuScoreEvaluator(tokenizer="nltk")
    outs = ev.score_batch(_rows(cases))
    for (hyp, refs), out in zip(cases, outs, strict=True):
        assert out["gleu"] == pytest.approx(_gleu_definition(tok(hyp), [tok(r) for r in refs]), abs=TOL)


def test_tokenizer_is_nltk_word_tokenize_without_punkt(cases: list[tuple[str, list[str]]]) -> None:
    from nltk.tokenize import word_tokenize

    tok = WordTokenizer("nltk")
    for hyp, _ in cases[:400]:
        assert tok(hyp) == word_tokenize(hyp, preserve_line=True)
    assert WordTokenizer("13a")("Hello, world.") == ["Hello", ",", "world", "."]
    assert WordTokenizer("whitespace")(" a  b ") == ["a", "b"]
    with pytest.raises(ValueError):
        WordTokenizer("punkt")


# ---------------------------------------------------------------------------------------- METEOR
def _meteor_definition(hyp: list[str], ref: list[str], alpha: float, beta: float, gamma: float) -> float:
    """METEOR as nltk defines it, written out, without synonyms: lowercase; greedy exact matches
    (hypothesis words from the last, each taking the last unmatched equal reference word), then the
    same on Porter stems of what is left; chunks of consecutive aligned pairs; F-mean and penalty."""
    from nltk.stem.porter import PorterStemmer

    stem = PorterStemmer().stem
    h = [(i, w.lower()) for i, w in enumerate(hyp)]
    r = [(j, w.lower()) for j, w in enumerate(ref)]
    matches: list[tuple[int, int]] = []
    for transform in (lambda w: w, stem):
        hh = [(i, transform(w)) for i, w in h]
        rr = [(j, transform(w)) for j, w in r]
        positions: dict[str, list[int]] = {}
        for k, (_, w) in enumerate(rr):
            positions.setdefault(w, []).append(k)
        used_h, used_r = set(), set()
        for k in range(len(hh) - 1, -1, -1):
            pos = positions.get(hh[k][1])
            if pos:
                kk = pos.pop()
                used_h.add(k)
                used_r.add(kk)
                matches.append((hh[k][0], rr[kk][0]))
        h = [p for k, p in enumerate(h) if k not in used_h]
        r = [p for k, p in enumerate(r) if k not in used_r]
    matches.sort()
    if not matches or not hyp or not ref:
        return 0.0
    p, rec = len(matches) / len(hyp), len(matches) / len(ref)
    fmean = p * rec / (alpha * p + (1 - alpha) * rec)
    chunks = 1 + sum(
        1 for a, b in itertools.pairwise(matches) if not (b[0] == a[0] + 1 and b[1] == a[1] + 1)
    )
    score: float = (1 - gamma * (chunks / len(matches)) ** beta) * fmean
    return score


@pytest.mark.parametrize("params", [(0.9, 3.0, 0.5), (0.8, 2.0, 0.3)])
def test_meteor_against_definition(
    cases: list[tuple[str, list[str]]], params: tuple[float, float, float]
) -> None:
    tok = WordTokenizer("nltk")
    ev = MeteorScoreEvaluator(*params, use_wordnet=False, tokenizer="nltk")
    outs = ev.score_batch(_rows(cases))
    for (hyp, refs), out in zip(cases, outs, strict=True):
        expected = max(_meteor_definition(tok(hyp), tok(r), *params) for r in refs)
        assert out["meteor"] == pytest.approx(expected, abs=TOL), (hyp, refs)


def test_meteor_without_wordnet_equals_nltk_with_no_synonyms() -> None:
    from nltk.translate.meteor_score import meteor_score

    class NoSynonyms:
        def synsets(self, word: str) -> list[Any]:
            return []

    ev = MeteorScoreEvaluator(use_wordnet=False)
    assert ev.options()["wordnet"] is False
    tok = WordTokenizer()
    for hyp, refs in _cases(99, 200):
        expected = meteor_score([tok(r) for r in refs], tok(hyp), wordnet=NoSynonyms())
        assert ev(response=hyp, ground_truth=refs)["meteor"] == pytest.approx(expected, abs=TOL)


def test_nothing_downloads(monkeypatch: pytest.MonkeyPatch) -> None:
    import nltk

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("nltk.download called")

    monkeypatch.setattr(nltk, "download", refuse)
    for ev in (
        MeteorScoreEvaluator(),
        GleuScoreEvaluator(),
        RougeScoreEvaluator("rougeLsum"),
        BleuScoreEvaluator(),
    ):
        ev(response="Hello world. Fine.", ground_truth="Hello there world. Fine!")


# ------------------------------------------------------------------------------------ edge cases
ALL = [
    BleuScoreEvaluator,
    ChrfScoreEvaluator,
    GleuScoreEvaluator,
    MeteorScoreEvaluator,
    lambda: RougeScoreEvaluator("rougeL"),
    lambda: RougeScoreEvaluator("rouge2"),
    lambda: RougeScoreEvaluator("rougeLsum"),
]


@pytest.mark.parametrize("make", ALL)
def test_edge_cases_are_defined(make: Any) -> None:
    """Empty or whitespace-only on either side: 0. Punctuation-only, single tokens, unicode and CJK:
    a number in [0, 1], never NaN (punctuation is a token for BLEU, chrF, GLEU and METEOR; ROUGE's
    tokenizer drops it, so ROUGE gives 0)."""
    ev = make()
    key = ev.score_key
    blank = ["", " ", "\t\n ", "\n"]
    other = ["...", "!?", "—", "a", "日本語", "naïve café", "😀", "The cat sat."]
    for a in blank:
        for b in blank + other:
            assert ev(response=a, ground_truth=b)[key] == 0.0, (a, b)
            assert ev(response=b, ground_truth=a)[key] == 0.0, (b, a)
    for a in other:
        for b in other:
            value = ev(response=a, ground_truth=b)[key]
            assert 0.0 <= value <= 1.0 and not math.isnan(value), (a, b, value)
            if isinstance(ev, RougeScoreEvaluator) and a in ("...", "!?", "—", "日本語", "😀"):
                assert value == 0.0
    assert ev(response="a", ground_truth="b")[key] == 0.0


def test_identical_texts_score_one() -> None:
    text = "the quick brown fox jumps over the lazy dog"
    assert BleuScoreEvaluator()(response=text, ground_truth=text)["bleu"] == pytest.approx(1.0)
    assert ChrfScoreEvaluator()(response=text, ground_truth=text)["chrf"] == pytest.approx(1.0)
    assert GleuScoreEvaluator()(response=text, ground_truth=text)["gleu"] == pytest.approx(1.0)
    assert RougeScoreEvaluator("rougeL")(response=text, ground_truth=text)["rouge_f1_score"] == 1.0


def test_very_long_texts() -> None:
    rng = random.Random(1)
    vocab = [f"w{i}" for i in range(500)]

    def long_text() -> str:
        words: list[str] = []
        size = 0
        while size < 100_000:
            words.append(rng.choice(vocab))
            size += len(words[-1]) + 1
        return " ".join(words)

    a, b = long_text(), long_text()
    assert len(a) >= 100_000
    started = time.perf_counter()
    evaluators = (
        BleuScoreEvaluator(),
        ChrfScoreEvaluator(),
        GleuScoreEvaluator(),
        MeteorScoreEvaluator(),
        RougeScoreEvaluator("rougeL"),
        RougeScoreEvaluator("rouge1"),
    )
    for ev in evaluators:
        out = ev(response=a, ground_truth=b)
        assert 0.0 < out[ev.score_key] < 1.0
    assert time.perf_counter() - started < 30
    # ROUGE-L on 100k characters agrees with rouge-score's definition via the LCS of the token lists
    from rouge_score.tokenizers import DefaultTokenizer

    ta, tb = DefaultTokenizer(False).tokenize(a), DefaultTokenizer(False).tokenize(b)
    lcs = lcs_length(tb, ta)
    out = RougeScoreEvaluator("rougeL")(response=a, ground_truth=b)
    assert out["rouge_precision"] == lcs / len(ta) and out["rouge_recall"] == lcs / len(tb)


# ------------------------------------------------------------------------------- keys and plumbing
def test_output_keys_follow_the_sdk() -> None:
    suffixes = ["", "_score", "_passed", "_result", "_reason", "_status", "_threshold", "_properties"]
    for ev, m in (
        (BleuScoreEvaluator(), "bleu"),
        (GleuScoreEvaluator(), "gleu"),
        (MeteorScoreEvaluator(), "meteor"),
    ):
        out = ev(response="a b c", ground_truth="a b d")
        assert [k for k in out] == [m + s for s in suffixes]
        assert out[f"{m}_threshold"] == 0.5 and out[f"{m}_status"] == "completed"
    out = RougeScoreEvaluator(
        RougeType.ROUGE_4, precision_threshold=0.1, recall_threshold=0.2, f1_score_threshold=0.3
    )(response="a b c", ground_truth="a b d")
    assert all("rouge" + s in out for s in suffixes)
    for name, t in (("precision", 0.1), ("recall", 0.2), ("f1_score", 0.3)):
        assert out[f"rouge_{name}_threshold"] == out["rouge_properties"][f"rouge_{name}_threshold"] == t
        assert out[f"rouge_{name}_result"] in ("pass", "fail")
    assert out["rouge_threshold"] == 0.3


def test_failures_are_rows_not_crashes() -> None:
    ev = BleuScoreEvaluator()
    outs = ev.score_batch([{"response": None, "ground_truth": "a"}, {"response": "a", "ground_truth": "a"}])
    assert "bleu_error" in outs[0] and outs[0]["bleu_status"] == "failed"
    assert outs[1]["bleu"] == 1.0  # one identical token: effective order 1
    with pytest.raises(ValueError):
        RougeScoreEvaluator("rougeX")
    if not _wordnet_present():
        with pytest.raises(ValueError):
            MeteorScoreEvaluator(use_wordnet=True)


def _wordnet_present() -> bool:
    from touchstone.evaluators.text import wordnet_installed

    return wordnet_installed()


def test_registry_and_pickling() -> None:
    names = {"bleu_score", "gleu_score", "meteor_score", "rouge", "chrf_score"}
    assert names <= set(registry.available())
    ev = registry.create("rouge", rouge_type="rouge2", use_stemmer=True)
    assert isinstance(ev, RougeScoreEvaluator) and ev.rouge_type == "rouge2" and ev.use_stemmer
    for e in (BleuScoreEvaluator(), ChrfScoreEvaluator(word_order=2), MeteorScoreEvaluator(), ev):
        e(response="a b c", ground_truth="a b c d")  # builds lazy state
        clone = pickle.loads(pickle.dumps(e))
        assert clone(response="x y z", ground_truth="x y") == e(response="x y z", ground_truth="x y")
