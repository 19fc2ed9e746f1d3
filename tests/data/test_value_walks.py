"""data/loaders.py's quick walk (_clean) and data/kinds.py's quick id-list check against the full
checks they stand in front of, on random nested values: the quick path passes exactly the values the
full one finds nothing wrong with."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from touchstone.data import loaders
from touchstone.data.kinds import _check_id_list
from touchstone.data.loaders import _clean, _walk_problem, value_problem

LEAVES: list[Any] = [0, -1, 2.5, math.nan, None, True, "plain", "", "é", "\ud800", "a\udfffb", 2**70]


def _nested(rng: random.Random, depth: int) -> Any:
    roll = rng.random()
    if depth <= 0 or roll < 0.35:
        return rng.choice(LEAVES)
    if roll < 0.6:
        return [_nested(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.7:
        return tuple(_nested(rng, depth - 1) for _ in range(rng.randint(0, 3)))
    keys = ["k", "doc", "é", "\udc80", "x"]
    return {rng.choice(keys) + str(i): _nested(rng, depth - 1) for i in range(rng.randint(0, 4))}


def _deep(levels: int) -> Any:
    value: Any = "end"
    for i in range(levels):
        value = [value] if i % 2 else {"d": value}
    return value


@pytest.mark.parametrize("seed", range(300))
def test_the_quick_walk_passes_what_the_full_walk_passes(seed: int) -> None:
    rng = random.Random(seed)
    value = {"col": _nested(rng, rng.randint(0, 6))}
    assert _clean(value) == (_walk_problem(value) is None)
    assert value_problem(value) == _walk_problem(value)


@pytest.mark.parametrize("levels", [loaders.MAX_DEPTH - 2, loaders.MAX_DEPTH - 1, loaders.MAX_DEPTH,
                                    loaders.MAX_DEPTH + 1, loaders.MAX_DEPTH + 5])
def test_depth_is_judged_alike(levels: int) -> None:
    value = {"col": _deep(levels)}
    assert _clean(value) == (_walk_problem(value) is None)
    assert value_problem(value) == _walk_problem(value)


def _full_id_list(value: list[Any], score_field: str, numeric_required: bool) -> str | None:
    """The item checks without the quick path (a subclass of dict takes the full checks)."""

    class Box(dict[str, Any]):
        pass

    boxed = [Box(item) if type(item) is dict else item for item in value]
    return _check_id_list(boxed, score_field, numeric_required)


ITEMS: list[Any] = ["d1", 7, True, 2.5, None, {"document_id": "d", "s": 1}, {"document_id": 3, "s": 2.0},
                    {"document_id": "d", "s": 2.5}, {"document_id": True, "s": 1}, {"document_id": "d"},
                    {"document_id": "d", "s": None}, {"document_id": "d", "s": math.nan},
                    {"document_id": "d", "s": math.inf}, {"document_id": "d", "s": "3"}, {"s": 1},
                    {"document_id": "d", "s": False}]


@pytest.mark.parametrize("seed", range(200))
def test_quick_id_list_check_gives_the_full_checks_answer(seed: int) -> None:
    rng = random.Random(seed)
    value = [rng.choice(ITEMS) for _ in range(rng.randint(0, 6))]
    for numeric in (False, True):
        assert _check_id_list(value, "s", numeric) == _full_id_list(value, "s", numeric)


@pytest.mark.parametrize("label", [math.nan, math.inf, -math.inf])
def test_a_label_that_is_no_integer_is_named_not_a_crash(label: float) -> None:
    message = _check_id_list([{"document_id": "d", "s": label}], "s", True)
    assert message is not None and "to be an integer" in message
