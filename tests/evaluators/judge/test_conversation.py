"""Conversation (RAG chat) judging over the loopback fake server: the SDK's exchanges (the default) and
touchstone's turns with history (``conversation_mode="history"``), what each prompt holds, per-turn
results and the conversation's outputs as the compatible SDK combines them."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest

from touchstone.errors import ConfigurationError, InputValidationError
from touchstone.evaluators.judge.conversation import (
    combine_outputs,
    exchange_inputs,
    split_turns,
    turn_input_names,
)
from touchstone.evaluators.prompt_metrics import CoherenceEvaluator, FluencyEvaluator
from touchstone.evaluators.quality import GroundednessEvaluator, RelevanceEvaluator
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


def test_groundedness_history_mode_per_turn(
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
    out = GroundednessEvaluator(judge_config, conversation_mode="history")(conversation=CHAT)
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

    # the SDK's combination: the mean, the last turn's verdict and reason, the share of passing turns
    assert out["groundedness"] == 3.0 and out["gpt_groundedness"] == 3.0
    assert out["groundedness_result"] == "fail" and out["groundedness_passed"] == 0.5
    assert out["groundedness_reason"] == "The rates say $15 flat."
    # touchstone's stricter reading beside it
    assert out["groundedness_turns_min"] == 1.0 and out["groundedness_all_turns_passed"] is False
    per_turn = out["evaluation_per_turn"]
    assert per_turn["groundedness"] == [5.0, 1.0]
    assert per_turn["groundedness_result"] == ["pass", "fail"]
    assert per_turn["groundedness_reason"] == ["Matches the policy.", "The rates say $15 flat."]
    assert per_turn["groundedness_properties"][1]["ungrounded_facts"][0]["problem"] == "contradicts"
    props = out["groundedness_properties"]
    assert props["aggregation"] == "mean" and props["turns"] == 2 and props["prompt"] == "groundedness_chat"
    assert props["conversation_mode"] == "history"


@pytest.mark.parametrize(("how", "expected"), [("min", 2), ("mean", 3.5), ("max", 5)])
def test_aggregation_is_selectable(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], how: str, expected: float
) -> None:
    by_turn(fake_openai, {"5-7 business days": {"ungrounded_facts": [], "reason": "a", "score": 5},
                          "free on every order": {"ungrounded_facts": [], "reason": "b", "score": 2}})
    ev = GroundednessEvaluator(judge_config, conversation_aggregation=how, conversation_mode="history")
    out = ev(conversation=CHAT)
    assert out["groundedness"] == expected
    assert out["groundedness_result"] == "fail"  # the last turn's, whatever the aggregation


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
    ev = RelevanceEvaluator(judge_config, domain="outdoor retail", conversation_mode="history")
    out = ev(conversation=CHAT)
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
    out = RelevanceEvaluator(judge_config, conversation_mode="history")(conversation=CHAT)
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
    out = RelevanceEvaluator(judge_config, conversation_mode="history")(conversation=chat)
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
    out = RelevanceEvaluator(judge_config, conversation_mode="history")(conversation=chat)
    assert blocks(seen[0].last_user)["ground_truth"] == "$15 flat; free over $200."
    assert "GROUND-TRUTH" in seen[0].messages[0]["content"]
    assert out["relevance"] == 1
    # one exchange: its outputs as they are (no evaluation_per_turn), as the SDK returns them
    assert "evaluation_per_turn" not in out
    assert out["relevance_properties"]["prompt"] == "relevance_ground_truth"


@pytest.mark.parametrize("cls", [CoherenceEvaluator, FluencyEvaluator])
def test_coherence_and_fluency_take_history(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str], cls: Any
) -> None:
    seen = by_turn(fake_openai, {"5-7": {"reason": "a", "score": 4}, "free on": {"reason": "b", "score": 5}})
    out = cls(judge_config, conversation_mode="history")(conversation=CHAT)
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
    ev = RetrievalScoreEvaluator(judge_config, conversation_aggregation="min", conversation_mode="history")
    out = ev(conversation=CHAT)
    assert out["evaluation_per_turn"]["retrieval_score"] == [5.0, 1.0]
    assert out["evaluation_per_turn"]["retrieval_coverage"] == [1.0, 0.0]
    assert out["retrieval_score"] == 1.0 and out["retrieval_coverage"] == 0.0
    out = RetrievalEvaluator(judge_config, conversation_mode="history")(conversation=CHAT)
    assert out["retrieval"] == 3 and out["evaluation_per_turn"]["retrieval"] == [4, 2]


def test_a_failed_turn_fails_the_conversation_and_keeps_the_others(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    by_turn(fake_openai, {"5-7 business days": {"ungrounded_facts": [], "reason": "fine", "score": 5},
                          "free on every order": "I refuse to grade this."})
    ev = GroundednessEvaluator(judge_config, conversation_mode="history")
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
    ev = GroundednessEvaluator(judge_config, conversation_mode="history")
    result = evaluate(data=rows, evaluators={"groundedness": ev}, store=tmp_path / "runs.db",
                      output_path=tmp_path / "out")
    r0, r1 = result["rows"]
    assert r0["outputs.groundedness.groundedness"] == 4.0
    assert r0["outputs.groundedness.evaluation_per_turn.groundedness"] == [5, 3]  # flattened, as the SDK
    assert r1["outputs.groundedness.groundedness"] == 5
    assert result["metrics"]["groundedness.groundedness"] == 4.5
    assert (tmp_path / "out" / "rows.jsonl").exists()


# ---------------------------------------------------------------------------- the SDK's exchanges (default)
RAG_CHAT: dict[str, Any] = {
    "context": "Store hours: 9am to 6pm.",
    "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "When do you open?", "context": "user-attached page"},
        {"role": "assistant", "content": "At 9am.", "context": "Opening: 9am."},
        {"role": "user", "content": "Returns after 40 days?"},
        {"role": "assistant", "content": "Any time at all."},
    ],
}


def test_exchange_inputs_pair_the_ith_user_with_the_ith_assistant() -> None:
    names = frozenset({"query", "response", "context"})
    rows = exchange_inputs(RAG_CHAT, names)
    assert [r["query"] for r in rows] == ["When do you open?", "Returns after 40 days?"]
    assert rows[0]["context"] == str(
        {"global_context": "Store hours: 9am to 6pm.", "query_context": "user-attached page",
         "response_context": "Opening: 9am."}
    )
    assert rows[1]["context"] == str({"global_context": "Store hours: 9am to 6pm."})
    # a metric that reads no response gets no response context (the SDK's retrieval)
    retrieval_rows = exchange_inputs(RAG_CHAT, frozenset({"query", "context"}))
    assert "response" not in retrieval_rows[0] and "response_context" not in retrieval_rows[0]["context"]
    # pairs by order, not by adjacency: an assistant speaking first answers nothing of its own
    odd = {"messages": [{"role": "assistant", "content": "Welcome"}, {"role": "user", "content": "Hi"},
                        {"role": "assistant", "content": "Yes?"}]}
    assert exchange_inputs(odd, frozenset({"query", "response"})) == [{"query": "Hi", "response": "Welcome"}]
    assert exchange_inputs(RAG_CHAT, names, last_turn=True)[0]["response"] == "Any time at all."
    with_truth = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "r"}]}
    assert exchange_inputs(with_truth, frozenset({"response", "ground_truth"})) == [
        {"response": "r", "ground_truth": ""}
    ]


def test_turn_input_names_follow_the_metric_inputs(judge_config: dict[str, str]) -> None:
    assert turn_input_names(GroundednessEvaluator(judge_config)) == {"query", "response", "context"}
    assert turn_input_names(RelevanceEvaluator(judge_config)) == {"query", "response"}
    assert turn_input_names(FluencyEvaluator(judge_config)) == {"response"}
    assert turn_input_names(RetrievalEvaluator(judge_config)) == {"query", "context"}


def test_combine_outputs_as_the_sdk() -> None:
    turns = [
        {"m": 5.0, "m_passed": True, "m_result": "pass", "m_threshold": 3, "m_properties": {"a": 1},
         "m_prompt_tokens": 7, "m_model": "x"},
        {"m": 2.0, "m_passed": False, "m_result": "fail", "m_threshold": 3, "m_properties": {"a": 2},
         "m_prompt_tokens": 9, "m_model": "x"},
    ]
    out = combine_outputs(turns)
    assert out["m"] == 3.5 and out["m_passed"] == 0.5 and isinstance(out["m_threshold"], float)
    assert out["m_result"] == "fail" and out["m_properties"] == {"a": 2}
    assert out["m_prompt_tokens"] == 8.0  # a number: aggregated like any other
    assert "m_model" not in out and out["evaluation_per_turn"]["m_model"] == ["x", "x"]
    assert combine_outputs(turns, "max")["m_threshold"] == 3 and combine_outputs(turns, "min")["m"] == 2.0


def _marker_judge(fake: FakeOpenAIServer) -> list[FakeRequest]:
    """Score each request by the last ``[J<n>]`` marker in its prompt (4 without one)."""
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        found = re.findall(r"\[J(\d)\]", req.last_user)
        return json.dumps({"reason": f"judged {found[-1] if found else 'none'}",
                           "score": int(found[-1]) if found else 4})

    fake.handler = handler
    return seen


MARKED: dict[str, Any] = {
    "messages": [
        {"role": "user", "content": "Boiling point of water?"},
        {"role": "assistant", "content": "100 C at sea level. [J5]", "context": "Water boils at 100 C."},
        {"role": "user", "content": "Freezing point?"},
        {"role": "assistant", "content": "10 C. [J2]", "context": "Water freezes at 0 C."},
    ]
}


def test_groundedness_conversation_mean_and_strict_keys(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = _marker_judge(fake_openai)
    ev = GroundednessEvaluator(judge_config)
    outcome = asyncio.run(ev.ascore({"conversation": MARKED}))
    out = dict(outcome)
    assert len(seen) == 2 and all("history" not in blocks(r.last_user) for r in seen)
    first = next(r for r in seen if "[J5]" in r.last_user)
    assert "'response_context': 'Water boils at 100 C.'" in blocks(first.last_user)["context"]
    assert out["groundedness"] == 3.5 and out["groundedness_score"] == 3.5
    assert out["groundedness_passed"] == 0.5 and out["groundedness_threshold"] == 3.0
    assert out["groundedness_result"] == "fail" and out["groundedness_reason"] == "judged 2"
    assert out["groundedness_status"] == "completed"
    per_turn = out["evaluation_per_turn"]
    assert per_turn["groundedness"] == [5.0, 2.0] and per_turn["groundedness_threshold"] == [3, 3]
    assert per_turn["groundedness_passed"] == [True, False]
    assert out["groundedness_properties"]["turns"] == 2
    assert "prompt_tokens" in out["groundedness_properties"]
    # touchstone's stricter reading, as extra keys and a secondary Score
    assert out["groundedness_turns_min"] == 2.0 and out["groundedness_all_turns_passed"] is False
    main = outcome.scores[0]
    assert main.value == 3.5 and main.passed is False and main.reason == "judged 2"
    strict = outcome.score("groundedness_turns_min")
    assert strict is not None and strict.value == 2.0 and strict.passed is False
    # the stricter reading as the main score, by option
    out = GroundednessEvaluator(judge_config, conversation_aggregation="min")(conversation=MARKED)
    assert out["groundedness"] == 2.0 and out["groundedness_passed"] is False


def test_relevance_conversation_judges_each_exchange_without_context(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    seen = _marker_judge(fake_openai)
    chat = {"messages": [{"role": "user", "content": "A book about space?"},
                         {"role": "assistant", "content": "Cosmos. [J4]"},
                         {"role": "user", "content": "Shorter?"},
                         {"role": "assistant", "content": "I like pasta. [J1]"}]}
    out = RelevanceEvaluator(judge_config)(conversation=chat)
    assert len(seen) == 2  # judged, never a fixed 5
    assert out["evaluation_per_turn"]["relevance"] == [4.0, 1.0] and out["relevance"] == 2.5
    assert out["relevance_passed"] == 0.5 and out["relevance_result"] == "fail"


def test_retrieval_conversation_judges_the_query_with_the_global_context(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    def handler(req: FakeRequest) -> str:
        docs = blocks(req.last_user)["documents"]
        score = 5 if "Store hours" in docs and "Opening: 9am" not in docs else 1
        return json.dumps({"documents": [], "intent": "i", "thought_chain": "Let's think step by step.",
                           "reason": "r", "score": score})

    fake_openai.handler = handler
    out = RetrievalEvaluator(judge_config)(conversation=RAG_CHAT)
    assert out["evaluation_per_turn"]["retrieval"] == [5.0, 5.0]
    assert out["retrieval_properties"]["thought_chain"] == "Let's think step by step."
    assert all(p["thought_chain"] for p in out["evaluation_per_turn"]["retrieval_properties"])


def test_one_exchange_is_returned_as_it_is_and_none_gives_an_empty_dict(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    _marker_judge(fake_openai)
    one = {"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello. [J2]"}]}
    out = CoherenceEvaluator(judge_config)(conversation=one)
    assert "evaluation_per_turn" not in out
    assert out["coherence"] == 2.0 and out["coherence_passed"] is False and out["coherence_threshold"] == 3
    ev = CoherenceEvaluator(judge_config)
    assert ev(conversation={"messages": [{"role": "user", "content": "Hello?"}]}) == {}
    outcome = asyncio.run(ev.ascore({"conversation": {"messages": [{"role": "user", "content": "Hello?"}]}}))
    assert not outcome.failed and outcome.scores[0].value is None
    assert outcome.scores[0].label == "not_applicable"


def test_eval_last_turn_and_mode_options(fake_openai: FakeOpenAIServer, judge_config: dict[str, str]) -> None:
    seen = _marker_judge(fake_openai)
    out = FluencyEvaluator(judge_config, eval_last_turn=True)(conversation=MARKED)
    assert len(seen) == 1 and out["fluency"] == 2.0 and "evaluation_per_turn" not in out
    with pytest.raises(ConfigurationError, match="conversation_mode"):
        FluencyEvaluator(judge_config, conversation_mode="turns")
    assert FluencyEvaluator(judge_config).options()["conversation_mode"] == "sdk"


def test_a_conversation_with_single_row_inputs_is_rejected(judge_config: dict[str, str]) -> None:
    with pytest.raises(InputValidationError, match="cannot be given together"):
        RelevanceEvaluator(judge_config)(conversation=MARKED, query="Hi")


def test_a_failed_exchange_fails_the_conversation(
    fake_openai: FakeOpenAIServer, judge_config: dict[str, str]
) -> None:
    def handler(req: FakeRequest) -> str:
        second = any("10 C" in str(m["content"]) for m in req.messages)  # the repair request too
        return "I will not grade this." if second else json.dumps({"reason": "ok", "score": 5})

    fake_openai.handler = handler
    out = asyncio.run(CoherenceEvaluator(judge_config).ascore({"conversation": MARKED}))
    assert out.failed and out["coherence_error"].startswith("turn 2 of 2: ")
    assert out["evaluation_per_turn"]["coherence"] == [5.0, None]
