"""Conversation (RAG chat) judging over the loopback fake server: turn splitting, what each turn's
prompt holds, per-turn results and the conversation aggregate."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone.evaluators.conversation import split_turns
from touchstone.evaluators.quality import (
    CoherenceEvaluator,
    FluencyEvaluator,
    GroundednessEvaluator,
    RelevanceEvaluator,
)
from touchstone.evaluators.retrieval_judge import RetrievalEvaluator, RetrievalScoreEvaluator

CHAT: dict[str, Any] = {
    "messages": [
        {"role": "system", "content": "You are the Trailhead Outfitters assistant."},
        {"role": "user", "content": "Do you ship to Canada?"},
        {
            "role": "assistant",
            "content": "Yes, in 5-7 business days.",
            "context": {
                "citations": [
                    {
                        "id": "doc-17",
                        "title": "Shipping policy",
                        "content": "We ship to the US and Canada; Canada takes 5-7 business days.",
                    }
                ]
            },
        },
        {"role": "user", "content": "And how much does it cost?"},
        {
            "role": "assistant",
            "content": "Shipping to Canada is free on every order.",
            "context": {
                "citations": [
                    {"id": "doc-18", "title": "Rates", "content": "Canada: $15 flat; free over $200."}
                ]
            },
        },
    ]
}


def blocks(text: str) -> dict[str, str]:
    return {
        m.group(1): m.group(2) for m in re.finditer(r'<data name="(\w+)">\n(.*?)\n</data>', text, re.DOTALL)
    }


def by_turn(fake: FakeOpenAIServer, replies: dict[str, dict[str, Any] | str]) -> list[FakeRequest]:
    """Answer each request by which response (a key of ``replies``) its prompt judges."""
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        first_user = next(m["content"] for m in req.messages if m["role"] == "user")  # repairs keep it
        response = blocks(first_user).get("response", first_user)
        for needle, reply in replies.items():
            if needle in response:
                return reply if isinstance(reply, str) else json.dumps(reply)
        return json.dumps({"reason": "default", "score": 3})

    fake.handler = handler
    return seen


def test_split_turns() -> None:
    turns = split_turns({**CHAT, "context": "Returns are free within 30 days."})
    assert [t.index for t in turns] == [1, 2]
    t1, t2 = turns
    assert t1.query == "Do you ship to Canada?" and t1.response == "Yes, in 5-7 business days."
    assert t1.history == [{"role": "system", "content": "You are the Trailhead Outfitters assistant."}]
    assert [d["id"] for d in t1.documents] == ["doc-17", "conversation-context"]
    assert t2.query == "And how much does it cost?"
    assert [m["content"] for m in t2.history][1:] == ["Do you ship to Canada?", "Yes, in 5-7 business days."]
    assert [d["id"] for d in t2.documents] == ["doc-18", "conversation-context"]


def test_split_turns_odd_shapes() -> None:
    turns = split_turns(
        {
            "messages": [
                {"role": "assistant", "content": "Hi! How can I help?"},
                {"role": "user", "content": "Part one."},
                {"role": "user", "content": "Part two.", "context": "user-attached doc"},
                {
                    "role": "assistant",
                    "content": "Answer.",
                    "context": "plain string context",
                    "ground_truth": "The answer.",
                },
            ]
        }
    )
    assert turns[0].query is None and turns[0].history == []
    assert turns[1].query == "Part one.\n\nPart two."
    assert [d["content"] for d in turns[1].documents] == ["user-attached doc", "plain string context"]
    assert turns[1].ground_truth == "The answer."


def test_groundedness_per_turn_and_minimum(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = by_turn(
        fake_openai,
        {
            "5-7 business days": {"ungrounded_facts": [], "reason": "Matches the policy.", "score": 5},
            "free on every order": {
                "ungrounded_facts": [{"fact": "free on every order", "problem": "contradicts"}],
                "reason": "The rates say $15 flat.",
                "score": 1,
            },
        },
    )
    out = GroundednessEvaluator(judge_config)(conversation=CHAT)
    assert len(seen) == 2
    prompts = {blocks(r.last_user)["response"]: blocks(r.last_user) for r in seen}
    p2 = prompts["Shipping to Canada is free on every order."]
    assert p2["query"] == "And how much does it cost?"
    assert (
        "user: Do you ship to Canada?" in p2["history"]
        and "assistant: Yes, in 5-7 business days." in p2["history"]
    )
    assert '[document id="doc-18" title="Rates"]' in p2["documents"] and "doc-17" not in p2["documents"]
    assert "doc-17" in prompts["Yes, in 5-7 business days."]["documents"]
    assert "ungrounded_facts" in seen[0].json_schema["properties"]  # type: ignore[index]

    assert out["groundedness"] == 1 and out["gpt_groundedness"] == 1
    assert out["groundedness_result"] == "fail"
    assert out["groundedness_reason"].startswith("Turn 2 of 2 (lowest): The rates say $15 flat.")
    per_turn = out["evaluation_per_turn"]
    assert per_turn["groundedness"] == [5, 1]
    assert per_turn["groundedness_result"] == ["pass", "fail"]
    assert per_turn["groundedness_reason"] == ["Matches the policy.", "The rates say $15 flat."]
    assert per_turn["groundedness_properties"][1]["ungrounded_facts"][0]["problem"] == "contradicts"
    props = out["groundedness_properties"]
    assert props["aggregation"] == "min" and props["turns"] == 2 and props["prompt"] == "groundedness_chat"


@pytest.mark.parametrize(("how", "expected"), [("min", 2), ("mean", 3.5), ("max", 5)])
def test_aggregation_is_selectable(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], how: str, expected: float
) -> None:
    by_turn(fake_openai, {"5-7 business days": {"ungrounded_facts": [], "reason": "a", "score": 5},
                          "free on every order": {"ungrounded_facts": [], "reason": "b", "score": 2}})
    out = GroundednessEvaluator(judge_config, conversation_aggregation=how)(conversation=CHAT)
    assert out["groundedness"] == expected
    assert out["groundedness_result"] == ("pass" if expected >= 3 else "fail")


def test_relevance_reference_answer_and_domain(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = by_turn(
        fake_openai,
        {
            "5-7 business days": {
                "relevant_documents_found": True,
                "reference_answer": "Yes; 5-7 business days.",
                "reason": "Ideal.",
                "score": 5,
            },
            "free on every order": {
                "relevant_documents_found": True,
                "reference_answer": "$15 flat, free over $200.",
                "reason": "Wrong price.",
                "score": 2,
            },
        },
    )
    out = RelevanceEvaluator(judge_config, domain="outdoor retail")(conversation=CHAT)
    assert "working in the domain of outdoor retail" in seen[0].messages[0]["content"]
    schema = seen[0].json_schema
    assert schema is not None and list(schema["properties"]) == [
        "relevant_documents_found",
        "reference_answer",
        "reason",
        "score",
    ]
    assert out["relevance"] == pytest.approx(3.5)  # mean by default for relevance
    assert out["evaluation_per_turn"]["relevance"] == [5, 2]
    assert (
        out["evaluation_per_turn"]["relevance_properties"][1]["reference_answer"]
        == "$15 flat, free over $200."
    )


def test_relevance_is_5_when_no_relevant_document(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    by_turn(
        fake_openai,
        {
            "": {
                "relevant_documents_found": False,
                "reference_answer": "",
                "reason": "Nothing relevant.",
                "score": 2,
            }
        },
    )
    out = RelevanceEvaluator(judge_config)(conversation=CHAT)
    assert out["evaluation_per_turn"]["relevance"] == [5, 5]
    props = out["evaluation_per_turn"]["relevance_properties"][0]
    assert props["judge_score"] == 2 and props["score_mode"] == "rule"


def test_relevance_with_no_documents_needs_no_call(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    chat = {
        "messages": [
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": "Hello! How can I help?"},
        ]
    }
    out = RelevanceEvaluator(judge_config)(conversation=chat)
    assert out["relevance"] == 5 and fake_openai.count == 0
    assert "no reference answer" in out["relevance_reason"]


def test_relevance_with_ground_truth(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    seen = by_turn(fake_openai, {"": {"reason": "Contradicts the ground truth.", "score": 1}})
    chat = {
        "messages": [
            {"role": "user", "content": "Shipping cost to Canada?"},
            {"role": "assistant", "content": "Free.", "ground_truth": "$15 flat; free over $200."},
        ]
    }
    out = RelevanceEvaluator(judge_config)(conversation=chat)
    assert blocks(seen[0].last_user)["ground_truth"] == "$15 flat; free over $200."
    assert "GROUND-TRUTH" in seen[0].messages[0]["content"]
    assert out["relevance"] == 1
    assert out["evaluation_per_turn"]["relevance_properties"][0]["prompt"] == "relevance_ground_truth"


@pytest.mark.parametrize("cls", [CoherenceEvaluator, FluencyEvaluator])
def test_coherence_and_fluency_take_history(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], cls: Any
) -> None:
    seen = by_turn(fake_openai, {"5-7": {"reason": "a", "score": 4}, "free on": {"reason": "b", "score": 5}})
    out = cls(judge_config)(conversation=CHAT)
    m = cls.metric
    assert out[m] == pytest.approx(4.5) and out["evaluation_per_turn"][m] == [4, 5]
    second = next(r for r in seen if "free on" in r.last_user)
    assert "Do you ship to Canada?" in blocks(second.last_user)["history"]


def test_retrieval_metrics_per_turn(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    def handler(req: FakeRequest) -> str:
        docs = blocks(req.last_user)["documents"]
        if "intents" in (req.json_schema or {}).get("properties", {}):
            verdict = "Yes" if "doc-17" in docs else "No"
            return json.dumps(
                {
                    "intents": [
                        {
                            "intent": "x",
                            "verdict": verdict,
                            "document_ids": ["doc-17"] if verdict == "Yes" else [],
                        }
                    ],
                    "reason": "r",
                }
            )
        return json.dumps(
            {"documents": [], "intent": "i", "reason": "r", "score": 4 if "doc-17" in docs else 2}
        )

    fake_openai.handler = handler
    out = RetrievalScoreEvaluator(judge_config, conversation_aggregation="min")(conversation=CHAT)
    assert out["evaluation_per_turn"]["retrieval_score"] == [5.0, 1.0]
    assert out["evaluation_per_turn"]["retrieval_coverage"] == [1.0, 0.0]
    assert out["retrieval_score"] == 1.0 and out["retrieval_coverage"] == 0.0
    out = RetrievalEvaluator(judge_config)(conversation=CHAT)
    assert out["retrieval"] == 3 and out["evaluation_per_turn"]["retrieval"] == [4, 2]


def test_a_failed_turn_fails_the_conversation_and_keeps_the_others(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    by_turn(fake_openai, {"5-7 business days": {"ungrounded_facts": [], "reason": "fine", "score": 5},
                          "free on every order": "I refuse to grade this."})
    ev = GroundednessEvaluator(judge_config)
    out = asyncio.run(ev.ascore({"conversation": CHAT}))
    assert "groundedness" not in out
    assert (
        out["groundedness_error"].startswith("turn 2 of 2: ")
        and "no usable score" in out["groundedness_error"]
    )
    assert out["groundedness_status"] == "failed"
    per_turn = out["evaluation_per_turn"]
    assert per_turn["groundedness"] == [5, None]
    assert per_turn["groundedness_error"][0] is None and per_turn["groundedness_error"][1]
    assert fake_openai.count == 3  # two turns, one repair request


def test_conversation_rows_through_evaluate(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], tmp_path: Any
) -> None:
    from touchstone import evaluate

    by_turn(fake_openai, {"5-7 business days": {"ungrounded_facts": [], "reason": "a", "score": 5},
                          "free on every order": {"ungrounded_facts": [], "reason": "b", "score": 3}})
    rows = [
        CHAT,
        {"query": "Q?", "context": "Canada takes 5-7 business days.", "response": "5-7 business days"},
    ]
    result = evaluate(data=rows, evaluators={"groundedness": GroundednessEvaluator(judge_config)},
                      store=tmp_path / "runs.db", output_path=tmp_path / "out")
    r0, r1 = result["rows"]
    assert r0["outputs.groundedness.groundedness"] == 3
    assert r0["outputs.groundedness.evaluation_per_turn"]["groundedness"] == [5, 3]
    assert r1["outputs.groundedness.groundedness"] == 5
    assert result["metrics"]["groundedness.groundedness"] == 4
    assert (tmp_path / "out" / "rows.jsonl").exists()
