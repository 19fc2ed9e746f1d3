"""Long conversations in bounded memory: turns share the conversation's messages, a turn's history
text is its most recent HISTORY_CHAR_LIMIT characters, at most TURNS_IN_FLIGHT turns are judged at
once, and history-mode sample inputs are trimmed (still JSON)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from touchstone.evaluators.judge import conversation as conv
from touchstone.evaluators.judge.prompts import format_history
from touchstone.evaluators.prompt_metrics import CoherenceEvaluator


def _chat(exchanges: int, words: int = 5) -> dict[str, Any]:
    text = " ".join(["w"] * words)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "be brief"}]
    for i in range(exchanges):
        messages.append({"role": "user", "content": f"q{i} {text}"})
        messages.append({"role": "assistant", "content": f"a{i} {text}"})
    return {"messages": messages}


def test_turns_share_the_messages_and_short_histories_are_unchanged() -> None:
    chat = _chat(20)
    turns = conv.split_turns(chat)
    assert len(turns) == 20
    assert all(t.messages is chat["messages"] for t in turns)
    for t in turns:
        expected = chat["messages"][: 1 + 2 * (t.index - 1)]
        assert t.history == [{"role": m["role"], "content": m["content"]} for m in expected]
        assert t.history_text == format_history(t.history)


def test_long_history_keeps_the_most_recent_messages() -> None:
    words = 400  # ~800 characters a message: the limit is crossed after ~40 messages
    chat = _chat(200, words)
    last = conv.split_turns(chat)[-1]
    text = last.history_text
    assert text is not None
    first_line, _, rest = text.partition("\n\n")
    assert first_line.startswith("[") and first_line.endswith(" earlier messages left out]")
    left_out = int(first_line[1:].split()[0])
    kept = last.history[left_out:]
    assert rest == format_history(kept)  # whole messages, the most recent ones, in order
    assert len(rest) <= conv.HISTORY_CHAR_LIMIT
    next_older = format_history(last.history[left_out - 1 : left_out])
    assert len(rest) + 2 + len(next_older) > conv.HISTORY_CHAR_LIMIT  # one more would not have fitted
    assert kept[-1]["content"].startswith("a198 ")


def test_a_single_message_longer_than_the_limit_is_kept() -> None:
    big = "x" * (conv.HISTORY_CHAR_LIMIT + 10)
    chat = {"messages": [{"role": "system", "content": big}, {"role": "user", "content": "q"},
                         {"role": "assistant", "content": "a"}]}
    assert conv.split_turns(chat)[-1].history_text == "system: " + big  # at least the latest message


def test_at_most_turns_in_flight_are_judged_at_once() -> None:
    state = {"now": 0, "most": 0, "started": 0}

    async def judge_one(i: int) -> dict[str, Any]:
        state["now"] += 1
        state["started"] += 1
        state["most"] = max(state["most"], state["now"])
        await asyncio.sleep(0)
        state["now"] -= 1
        return {"coherence": 4.0, "coherence_reason": str(i)}

    ev = CoherenceEvaluator({"model": "m", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"})
    n = conv.TURNS_IN_FLIGHT * 3 + 5
    outs = asyncio.run(conv.gather_outputs(ev, [judge_one(i) for i in range(n)]))
    assert state["started"] == n and len(outs) == n
    assert state["most"] == conv.TURNS_IN_FLIGHT
    assert [o["coherence_reason"] for o in outs] == [str(i) for i in range(n)]  # order kept


def test_trim_sample_inputs_keeps_json_and_both_ends() -> None:
    history = "h" * 50_000
    messages = [{"role": "system", "content": "rules"}, {"role": "user", "content": history + "END"}]
    sample = json.dumps(messages)
    props = {"sample_input": sample, "model": "m"}
    conv.trim_sample_inputs({"coherence": 4.0, "coherence_properties": props})
    trimmed = props["sample_input"]
    assert len(trimmed) < conv.SAMPLE_INPUT_LIMIT
    messages = json.loads(trimmed)
    assert messages[0] == {"role": "system", "content": "rules"}
    assert messages[1]["content"].startswith("h" * conv.SAMPLE_MESSAGE_KEEP)
    assert messages[1]["content"].endswith("END") and "characters left out" in messages[1]["content"]
    kept = '[{"role": "user", "content": "hi"}]'
    assert conv.trim_sample_inputs({"p_properties": {"sample_input": kept}}) == {
        "p_properties": {"sample_input": kept}
    }
