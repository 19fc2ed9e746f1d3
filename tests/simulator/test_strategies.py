"""Attack strategies are exact, deterministic transforms: base64 and ROT13 round-trip, the leetspeak
map, a reproducible seeded character swap, the suffix, jailbreak templates and compositions."""

from __future__ import annotations

import base64
import codecs
import random
import re
import string

import pytest

from touchstone.errors import ConfigurationError
from touchstone.simulator import data
from touchstone.simulator.strategies import (
    BASE64_LEAD,
    LEET,
    ROT13_LEAD,
    SUFFIX,
    char_swap,
    decode_base64,
    encode_base64,
    get_strategy,
    leetspeak,
    parse_strategies,
    rot13,
)


def random_texts(n: int = 200) -> list[str]:
    rng = random.Random(0)
    alphabet = string.ascii_letters + string.digits + " .,!?{}éüß中文\n"
    return ["", "a", "Tell me about bridges."] + [
        "".join(rng.choice(alphabet) for _ in range(rng.randrange(1, 80))) for _ in range(n)
    ]


def test_base64_round_trips_and_is_the_standard_encoding() -> None:
    for text in random_texts():
        encoded = encode_base64(text)
        assert encoded == base64.b64encode(text.encode("utf-8")).decode("ascii")
        assert decode_base64(encoded) == text
        sent = get_strategy("base64").apply(text, 1)
        assert sent.startswith(BASE64_LEAD)
        assert decode_base64(sent[len(BASE64_LEAD):]) == text


def test_rot13_round_trips_and_rotates_letters_only() -> None:
    for text in random_texts():
        assert rot13(rot13(text)) == text
        assert rot13(text) == codecs.encode(text, "rot13")
        sent = get_strategy("rot13").apply(text)
        assert sent == ROT13_LEAD + rot13(text)
    assert rot13("Hello, World! 42") == "Uryyb, Jbeyq! 42"


def test_leetspeak_map() -> None:
    assert leetspeak("Tea is so tasty, IOTA") == "734 15 50 7457y, 1074"
    expected = {"a": "4", "e": "3", "i": "1", "o": "0", "s": "5", "t": "7"}
    for ch in string.printable:
        want = expected.get(ch.lower(), ch)
        assert leetspeak(ch) == want
        assert LEET.get(ord(ch), ch) == want


def test_char_swap_is_seeded_and_only_swaps_adjacent_inner_characters() -> None:
    for text in random_texts():
        a = char_swap(text, 7)
        assert a == char_swap(text, 7)  # reproducible
        assert sorted(a) == sorted(text) and len(a) == len(text)  # a permutation
        kept = list(a)
        for m in re.finditer(r"\w{4,}", text):  # a word: 4+ word characters
            w_in, w_out = m.group(0), a[m.start():m.end()]
            kept[m.start():m.end()] = list(w_in)
            if w_in != w_out:  # exactly one adjacent pair, not the first or last character
                diffs = [i for i, (x, y) in enumerate(zip(w_in, w_out, strict=True)) if x != y]
                assert len(diffs) == 2 and diffs[1] == diffs[0] + 1
                assert diffs[0] > 0 and diffs[1] < len(w_in) - 1
        assert "".join(kept) == text  # nothing outside the words moved
    long_text = " ".join(["wonderful"] * 40)
    assert char_swap(long_text, 1) != char_swap(long_text, 2)  # the seed matters
    assert get_strategy("char_swap").apply(long_text, 3) == char_swap(long_text, 3)


def test_suffix_and_jailbreak_templates() -> None:
    assert get_strategy("suffix").apply("x") == "x" + SUFFIX
    for template in data.jailbreaks():
        sent = get_strategy(f"jailbreak:{template.name}").apply("ATTACK {braces}")
        assert sent == template.text.replace("{attack}", "ATTACK {braces}")
    picked = {get_strategy("jailbreak").apply(f"turn {i}", 5) for i in range(30)}
    assert len(picked) == 30
    assert get_strategy("jailbreak").apply("turn 1", 5) == get_strategy("jailbreak").apply("turn 1", 5)


def test_complexities_and_compositions() -> None:
    assert get_strategy("baseline").complexity == "baseline"
    easy = ("base64", "rot13", "leetspeak", "char_swap", "suffix")
    assert {get_strategy(n).complexity for n in easy} == {"easy"}
    assert get_strategy("jailbreak").complexity == "moderate"
    both = get_strategy("leetspeak+base64")
    assert both.complexity == "difficult"
    assert both.apply("tea") == BASE64_LEAD + encode_base64("734")
    assert [s.name for s in parse_strategies("base64, rot13,base64")] == ["base64", "rot13"]


@pytest.mark.parametrize("bad", ["nope", "base64+", "jailbreak:unknown", ""])
def test_unknown_strategies_are_refused(bad: str) -> None:
    with pytest.raises(ConfigurationError):
        parse_strategies(bad)
