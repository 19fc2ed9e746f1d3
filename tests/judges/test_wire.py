"""Messages and request bodies encoded with the memo of long texts give exactly what ``json`` gives."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from touchstone.judges import wire
from touchstone.judges.cache import cache_key, chat_cache_key

ALPHABET = 'ab "\\\n\t\u00e9\u4e2d\U0001f600<>{}/\x00\x1f'


def text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(ALPHABET) for _ in range(n))


def messages(rng: random.Random) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for _ in range(rng.randint(0, 4)):
        message: dict[str, Any] = {"role": rng.choice(["system", "user", "assistant"])}
        message["content"] = text(rng, rng.choice([0, 5, 300, wire.LONG, 2000]))
        if rng.random() < 0.2:
            message["name"] = rng.choice([None, 3, 1.5, ["x"], {"k": "\u00e9"}])
        out.append(message)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_messages_json_is_json_dumps(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(5):
        msgs = messages(rng)
        assert wire.messages_json(msgs) == json.dumps(msgs, ensure_ascii=False)
        # twice: the second time from the memo
        assert wire.messages_json(msgs) == json.dumps(msgs, ensure_ascii=False)


@pytest.mark.parametrize("seed", range(20))
def test_body_json_is_the_same_json_value(seed: int) -> None:
    rng = random.Random(seed)
    body: dict[str, Any] = {"model": "m", "messages": messages(rng), "temperature": 0.0}
    if rng.random() < 0.5:
        body["response_format"] = {"type": "json_schema", "json_schema": {"schema": {"a": [1, "\u00e9"]}}}
    assert json.loads(wire.body_json(body)) == body
    assert json.loads(wire.body_json({"model": "m"})) == {"model": "m"}
    assert json.loads(wire.body_json({"messages": body["messages"]})) == {"messages": body["messages"]}


def test_the_memo_is_bounded_and_keeps_answers_right(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wire, "MEMO_SIZE", 3)
    texts = [f"{i}" * wire.LONG for i in range(10)]
    for t in texts * 2:
        assert wire.text_json(t) == json.dumps(t, ensure_ascii=False)
        assert len(wire._memo) <= 3


def test_chat_cache_key_covers_every_part() -> None:
    base = {"v": 1, "kind": "chat", "model": "m", "messages": [{"role": "user", "content": "x" * 2000}],
            "json_schema": {"type": "object"}}
    key = chat_cache_key(base)
    assert key == chat_cache_key(json.loads(json.dumps(base)))  # equal payloads, equal keys
    changed = [
        {**base, "messages": [{"role": "user", "content": "x" * 1999 + "y"}]},
        {**base, "messages": [{"role": "system", "content": "x" * 2000}]},
        {**base, "json_schema": {"type": "array"}},
        {**base, "model": "n"},
    ]
    assert len({key, *(chat_cache_key(c) for c in changed)}) == 5
    assert key != cache_key(base)  # a different text hashed: the two forms are not mixed up
